package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/bowline-iot/bowline/cloud/catalog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
)

// PaymentSucceeded is the webhook type that pays an order; other types are
// acknowledged and ignored.
const PaymentSucceeded = "payment.succeeded"

// webhook is the body of POST /v1/webhooks/payments.
type webhook struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Data is decoded (strictly) only for payment.succeeded; other types
	// are acknowledged whatever their data.
	Data json.RawMessage `json:"data"`
}

// webhookData is a webhook's data object.
type webhookData struct {
	PaymentID   string `json:"payment_id"`
	OrderID     string `json:"order_id"`
	AmountCents *int64 `json:"amount_cents"`
	Currency    string `json:"currency"`
}

// webhookResult is the 200 answer.
type webhookResult struct {
	// Status is "processed", "duplicate" or "ignored".
	Status  string `json:"status"`
	OrderID string `json:"order_id,omitempty"`
	EventID string `json:"event_id,omitempty"`
}

func (a *API) paymentWebhook(w http.ResponseWriter, r *http.Request) {
	body, ok := a.readBody(w, r)
	if !ok {
		return
	}
	// Nothing is parsed, read or written before the signature checks out.
	if err := VerifySignature([]byte(a.cfg.WebhookSecret), r.Header.Get(SignatureHeader), body, a.cfg.Now(), a.cfg.Tolerance); err != nil {
		code := CodeInvalidSignature
		if errors.Is(err, ErrStaleSignature) {
			code = CodeSignatureExpired
		}
		a.metrics.webhookRejected(code)
		a.log.Warn("webhook rejected", "reason", code, "err", err, "remote", r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, code, err.Error())
		return
	}
	var hook webhook
	if err := decodeStrict(body, &hook); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidJSON, "webhook: "+err.Error())
		return
	}
	if err := checkID("webhook id", hook.ID, maxIDLen, "_.:@-", idRule); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return
	}
	if err := checkID("webhook type", hook.Type, maxTypeLen, "_.:-", "1-64 ASCII letters, digits, '_', '.', ':' or '-'"); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return
	}
	if hook.Type != PaymentSucceeded {
		writeJSON(w, http.StatusOK, webhookResult{Status: "ignored"})
		return
	}
	var d webhookData
	if err := decodeStrict(hook.Data, &d); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidJSON, "webhook data: "+err.Error())
		return
	}
	if err := d.validate(); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "webhook "+err.Error())
		return
	}

	order, found, err := a.readOrder(r, d.OrderID)
	if err != nil {
		a.unavailable(w, r, err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, CodeOrderNotFound, fmt.Sprintf("order %q not found", d.OrderID))
		return
	}
	if done, ok := a.alreadyPaid(w, order, d); done || !ok {
		return
	}
	if reason := paymentMismatch(order, *d.AmountCents, d.Currency); reason != "" {
		a.refusePayment(w, r, order, hook.ID, d, reason)
		return
	}

	now := a.cfg.Now().UTC()
	paidAt := now.Format(engine.TimeLayout)
	payRow, err := attributevalue.MarshalMap(map[string]any{
		"pk": paymentPK(d.PaymentID), "order_id": order.ID, "tenant": order.Tenant,
		"webhook_id": hook.ID, "created_at": paidAt, "ttl": now.Add(paymentDedupTTL).Unix(),
	})
	if err != nil {
		a.internal(w, r, fmt.Errorf("marshal payment row %q: %w", d.PaymentID, err))
		return
	}
	writes := []engine.Write{
		{Update: &types.Update{
			TableName:                aws.String(a.cfg.Names.AppTable()),
			Key:                      orderKey(order.ID),
			UpdateExpression:         aws.String("SET #status = :paid, payment_id = :pid, paid_at = :at"),
			ConditionExpression:      aws.String("#status = :pending"),
			ExpressionAttributeNames: map[string]string{"#status": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":paid": attr.S(StatusPaid), ":pending": attr.S(StatusPending), ":pid": attr.S(d.PaymentID), ":at": attr.S(paidAt),
			},
		}},
		{Put: &types.Put{
			TableName: aws.String(a.cfg.Names.InboxTable()), Item: payRow,
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}},
	}
	// The tenant is the order's, never anything the webhook says.
	ctx := engine.WithCorrelationID(engine.WithActor(engine.WithTenant(r.Context(), order.Tenant), "payments-webhook"), order.CorrelationID)
	payload := map[string]any{
		"order_id": order.ID, "payment_id": d.PaymentID, "amount_cents": order.AmountCents, "currency": order.Currency,
		"customer_id": order.CustomerID, "pet_id": order.PetID, "items": order.Items,
	}
	env, err := a.cfg.Emitter.EmitEvent(ctx, engine.Event{Type: catalog.TypePaymentCompleted, Payload: payload, Writes: writes})
	var cf *engine.ConditionFailedError
	switch {
	case err == nil:
		a.metrics.emitted(catalog.TypePaymentCompleted)
		a.log.Info("order paid", "tenant", order.Tenant, "order", order.ID, "payment", d.PaymentID, "event", env.ID)
		writeJSON(w, http.StatusOK, webhookResult{Status: "processed", OrderID: order.ID, EventID: env.ID})
	case errors.As(err, &cf):
		// A concurrent delivery won, or the payment id belongs to another
		// order: the fresh order row says which.
		order, found, rerr := a.readOrder(r, d.OrderID)
		if rerr != nil || !found {
			a.unavailable(w, r, fmt.Errorf("re-read order %q after %w: %v", d.OrderID, err, rerr))
			return
		}
		if done, ok := a.alreadyPaid(w, order, d); done || !ok {
			return
		}
		writeError(w, http.StatusConflict, CodePaymentReused, fmt.Sprintf("payment %q already paid another order", d.PaymentID))
	default:
		a.emitFailed(w, r, fmt.Errorf("pay order %q with payment %q: %w", d.OrderID, d.PaymentID, err))
	}
}

// refusePayment answers a payment whose amount or currency differs from its
// order's (reason "amount" or "currency"): it is never marked paid, the
// refusal is counted and logged, and com.payment_refused (no subscription)
// records it in the order's tenant's chain, where the console shows it on
// the order. The event is keyed by the webhook id, so the provider's
// retries of one delivery record it once. If the record cannot be written
// the answer is the emit's error (503 when retryable), so the provider
// retries and the refusal is not lost; once written, the answer is 422.
func (a *API) refusePayment(w http.ResponseWriter, r *http.Request, order Order, hookID string, d webhookData, reason string) {
	a.metrics.paymentMismatch(reason)
	a.log.Warn("payment does not match its order; not marked paid", "reason", reason, "tenant", order.Tenant,
		"order", order.ID, "payment", d.PaymentID, "paid_cents", *d.AmountCents, "paid_currency", d.Currency,
		"order_cents", order.AmountCents, "order_currency", order.Currency)
	ctx := engine.WithCorrelationID(engine.WithActor(engine.WithTenant(r.Context(), order.Tenant), "payments-webhook"), order.CorrelationID)
	payload := map[string]any{
		"order_id": order.ID, "payment_id": d.PaymentID, "webhook_id": hookID, "reason": reason,
		"amount_cents": *d.AmountCents, "currency": d.Currency,
		"order_amount_cents": order.AmountCents, "order_currency": order.Currency,
	}
	_, err := a.cfg.Emitter.EmitEvent(ctx, engine.Event{Type: catalog.TypePaymentRefused, Payload: payload, IdempotencyKey: "payment-refused/" + hookID})
	var dup *engine.DuplicateError
	switch {
	case err == nil:
		a.metrics.emitted(catalog.TypePaymentRefused)
	case errors.As(err, &dup):
	default:
		a.emitFailed(w, r, fmt.Errorf("record refused payment %q for order %q: %w", d.PaymentID, order.ID, err))
		return
	}
	code := CodeAmountMismatch
	if reason == "currency" {
		code = CodeCurrencyMismatch
	}
	writeError(w, http.StatusUnprocessableEntity, code, fmt.Sprintf("payment %q of %s does not match order %q of %s; not paid",
		d.PaymentID, catalog.Money(*d.AmountCents, d.Currency), order.ID, catalog.Money(order.AmountCents, order.Currency)))
}

// validate checks a payment.succeeded's data.
func (d webhookData) validate() error {
	if err := checkIDField("data.payment_id", d.PaymentID); err != nil {
		return err
	}
	if err := checkIDField("data.order_id", d.OrderID); err != nil {
		return err
	}
	switch {
	case d.AmountCents == nil:
		return errors.New("data.amount_cents: required")
	case *d.AmountCents < 0:
		return fmt.Errorf("data.amount_cents %d: must not be negative", *d.AmountCents)
	}
	return checkCurrency("data.currency", d.Currency)
}

// paymentMismatch says how a payment differs from its order: "amount",
// "currency" or "" when it matches. An order written before orders had a
// currency has none and matches only on the amount.
func paymentMismatch(o Order, amount int64, currency string) string {
	switch {
	case amount != o.AmountCents:
		return "amount"
	case o.Currency != "" && currency != o.Currency:
		return "currency"
	}
	return ""
}

// alreadyPaid answers for an order that is no longer pending: a repeat of
// the same payment is a duplicate (200, nothing emitted), another payment is
// a conflict. A repeat whose amount or currency differs from the order's
// (which the payment matched when it paid) is still a duplicate, but is
// logged and counted as a mismatch with reason "duplicate_amount" or
// "duplicate_currency": the provider is saying something else about a
// payment that is already booked. done is true when a response was
// written for a repeat; ok is false when a conflict was written.
func (a *API) alreadyPaid(w http.ResponseWriter, o Order, d webhookData) (done, ok bool) {
	if o.Status == StatusPending {
		return false, true
	}
	if o.PaymentID == d.PaymentID {
		if reason := paymentMismatch(o, *d.AmountCents, d.Currency); reason != "" {
			a.metrics.paymentMismatch("duplicate_" + reason)
			a.log.Warn("repeated payment differs from the one that paid its order; answered duplicate",
				"reason", "duplicate_"+reason, "tenant", o.Tenant, "order", o.ID, "payment", d.PaymentID,
				"paid_cents", *d.AmountCents, "paid_currency", d.Currency,
				"order_cents", o.AmountCents, "order_currency", o.Currency)
		}
		a.metrics.webhookDuplicate()
		writeJSON(w, http.StatusOK, webhookResult{Status: "duplicate", OrderID: o.ID})
		return true, true
	}
	writeError(w, http.StatusConflict, CodeOrderAlreadyPaid, fmt.Sprintf("order %q is %s (payment %q)", o.ID, o.Status, o.PaymentID))
	return false, false
}

func (a *API) readOrder(r *http.Request, id string) (Order, bool, error) {
	out, err := a.cfg.DB.GetItem(r.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(a.cfg.Names.AppTable()), ConsistentRead: aws.Bool(true),
		Key: orderKey(id),
	})
	if err != nil {
		return Order{}, false, fmt.Errorf("read order %q: %w", id, err)
	}
	if out.Item == nil {
		return Order{}, false, nil
	}
	var o Order
	if err := attributevalue.UnmarshalMap(out.Item, &o); err != nil {
		return Order{}, false, fmt.Errorf("decode order %q: %w", id, err)
	}
	return o, true, nil
}
