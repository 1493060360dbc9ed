package console

import (
	"fmt"
	"strings"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
)

// undecodable is what a page shows in place of a payload's fields when
// the payload does not decode into its catalog type (catalog.Decode): the
// row stays listed, with the error in its title, and its event page shows
// the payload's JSON as it is.
const undecodable = "undecodable payload"

// comEvent is what the pages show of a commerce event (com.order_created,
// com.payment_completed, com.payment_refused), taken from its catalog
// payload type.
type comEvent struct {
	Order, Payment string
	Customer, Pet  string
	// Amount is the event's amount in its currency (money); a refusal's
	// is what the payment said.
	Amount string
	// Refusal words a com.payment_refused: "amount 40.00 USD, expected
	// 49.99 USD" (or "currency ..." for a payment in another currency).
	Refusal string
	// Err is why the payload did not decode; then every other field is
	// empty.
	Err error
}

// commerceOf decodes a commerce event's payload; ok is false for an event
// of another type.
func commerceOf(e engine.Envelope) (c comEvent, ok bool) {
	var err error
	switch e.Type {
	case catalog.TypeOrderCreated:
		var p catalog.OrderCreated
		if p, err = catalog.Decode[catalog.OrderCreated](e); err == nil {
			c = comEvent{Order: p.OrderID, Customer: p.CustomerID, Pet: p.PetID, Amount: money(p.AmountCents, p.Currency)}
		}
	case catalog.TypePaymentCompleted:
		var p catalog.PaymentCompleted
		if p, err = catalog.Decode[catalog.PaymentCompleted](e); err == nil {
			c = comEvent{Order: p.OrderID, Payment: p.PaymentID, Customer: p.CustomerID, Pet: p.PetID, Amount: money(p.AmountCents, p.Currency)}
		}
	case catalog.TypePaymentRefused:
		var p catalog.PaymentRefused
		if p, err = catalog.Decode[catalog.PaymentRefused](e); err == nil {
			c = comEvent{Order: p.OrderID, Payment: p.PaymentID, Amount: money(p.AmountCents, p.Currency),
				Refusal: fmt.Sprintf("%s %s, expected %s", p.Reason, money(p.AmountCents, p.Currency), money(p.OrderAmountCents, p.OrderCurrency))}
		}
	default:
		return comEvent{}, false
	}
	if err != nil {
		return comEvent{Err: err}, true
	}
	return c, true
}

// money says an amount in minor units of currency (ISO 4217) in that
// currency, "49.99 USD"; without a currency, "4,999 minor units"
// (catalog.Money).
func money(cents int64, currency string) string {
	return catalog.Money(cents, strings.ToUpper(currency))
}

// gapOf decodes a bowl.data_gap's payload; ok is false for an event of
// another type or a payload that does not decode (err says why).
func gapOf(e engine.Envelope) (g catalog.DataGap, ok bool, err error) {
	if e.Type != catalog.TypeDataGap {
		return g, false, nil
	}
	g, err = catalog.Decode[catalog.DataGap](e)
	return g, err == nil, err
}
