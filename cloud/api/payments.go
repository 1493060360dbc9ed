package api

import (
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

// paymentWebhook answers POST /v1/webhooks/payments: a signed
// payment.succeeded pays its pending order when amount and currency match
// (com.payment_completed, with the order's update and the payment's dedup
// row in one transaction), and is refused otherwise (refusePayment). Each
// step writes the answer when it ends the request.
func (a *API) paymentWebhook(w http.ResponseWriter, r *http.Request) {
	body, ok := a.signedBody(w, r)
	if !ok {
		return
	}
	hookID, d, ok := parsePayment(w, body)
	if !ok {
		return
	}
	order, ok := a.payableOrder(w, r, hookID, d)
	if !ok {
		return
	}
	a.payOrder(w, r, order, hookID, d)
}

// signedBody reads the body and checks its signature, answering 401 when it
// does not check out: nothing is parsed, read or written before it does.
func (a *API) signedBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, ok := a.readBody(w, r)
	if !ok {
		return nil, false
	}
	if err := VerifySignature([]byte(a.cfg.WebhookSecret), r.Header.Get(SignatureHeader), body, a.cfg.Now(), a.cfg.Tolerance); err != nil {
		code := CodeInvalidSignature
		if errors.Is(err, ErrStaleSignature) {
			code = CodeSignatureExpired
		}
		a.obs.WebhookRejected(code)
		a.log.Warn("webhook rejected", "reason", code, "err", err, "remote", r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, code, err.Error())
		return nil, false
	}
	return body, true
}

// parsePayment decodes a signed webhook, strictly, and returns its id and
// payment.succeeded's data. It answers (ok false) a malformed webhook with
// 400 and any other webhook type with 200 "ignored".
func parsePayment(w http.ResponseWriter, body []byte) (hookID string, d PaymentData, ok bool) {
	var hook PaymentWebhook
	if err := decodeStrict(body, &hook); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidJSON, "webhook: "+err.Error())
		return "", d, false
	}
	if err := checkID("webhook id", hook.ID, maxIDLen, "_.:@-", idRule); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return "", d, false
	}
	if err := checkID("webhook type", hook.Type, maxTypeLen, "_.:-", "1-64 ASCII letters, digits, '_', '.', ':' or '-'"); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return "", d, false
	}
	if hook.Type != PaymentSucceeded {
		writeJSON(w, http.StatusOK, WebhookAnswer{Status: WebhookIgnored})
		return "", d, false
	}
	if err := decodeStrict(hook.Data, &d); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidJSON, "webhook data: "+err.Error())
		return "", d, false
	}
	if err := d.validate(); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "webhook "+err.Error())
		return "", d, false
	}
	return hook.ID, d, true
}

// payableOrder returns the order d pays when it is pending and d matches
// its amount and currency. Otherwise it answers (ok false): 404 for no
// such order, a duplicate or a conflict for one already paid
// (alreadyPaid), a refusal for a mismatch (refusePayment), 503 when the
// order cannot be read.
func (a *API) payableOrder(w http.ResponseWriter, r *http.Request, hookID string, d PaymentData) (Order, bool) {
	order, found, err := a.readOrder(r, d.OrderID)
	if err != nil {
		a.unavailable(w, r, err)
		return Order{}, false
	}
	if !found {
		writeError(w, http.StatusNotFound, CodeOrderNotFound, fmt.Sprintf("order %q not found", d.OrderID))
		return Order{}, false
	}
	if done, ok := a.alreadyPaid(w, order, d); done || !ok {
		return Order{}, false
	}
	if reason := paymentMismatch(order, *d.AmountCents, d.Currency); reason != "" {
		a.refusePayment(w, r, order, hookID, d, reason)
		return Order{}, false
	}
	return order, true
}

// payOrder marks the pending order paid and emits com.payment_completed in
// one transaction, conditional on the order still pending and the payment
// id unused; a failed condition is answered from the fresh order row
// (paymentLost).
func (a *API) payOrder(w http.ResponseWriter, r *http.Request, order Order, hookID string, d PaymentData) {
	writes, err := a.paymentWrites(order, hookID, d)
	if err != nil {
		a.internal(w, r, err)
		return
	}
	// The tenant is the order's, never anything the webhook says.
	ctx := engine.WithCorrelationID(engine.WithActor(engine.WithTenant(r.Context(), order.Tenant), "payments-webhook"), order.CorrelationID)
	payload := catalog.PaymentCompleted{
		OrderID: order.ID, PaymentID: d.PaymentID, AmountCents: order.AmountCents, Currency: order.Currency,
		CustomerID: order.CustomerID, PetID: order.PetID, Items: lines(order.Items),
	}
	env, err := a.cfg.Emitter.EmitEvent(ctx, engine.Event{Type: catalog.TypePaymentCompleted, Payload: payload, Writes: writes})
	var cf *engine.ConditionFailedError
	switch {
	case err == nil:
		a.obs.Emitted(catalog.TypePaymentCompleted)
		a.log.Info("order paid", "tenant", order.Tenant, "order", order.ID, "payment", d.PaymentID, "event", env.ID)
		writeJSON(w, http.StatusOK, WebhookAnswer{Status: WebhookProcessed, OrderID: order.ID, EventID: env.ID})
	case errors.As(err, &cf):
		a.paymentLost(w, r, d, err)
	default:
		a.emitFailed(w, r, fmt.Errorf("pay order %q with payment %q: %w", d.OrderID, d.PaymentID, err))
	}
}

// paymentWrites are the writes that pay order with d: the order's status
// (on the condition it is pending) and the payment's dedup row (on the
// condition its id is new).
func (a *API) paymentWrites(order Order, hookID string, d PaymentData) ([]engine.Write, error) {
	now := a.cfg.Now().UTC()
	paidAt := now.Format(engine.TimeLayout)
	payRow, err := attributevalue.MarshalMap(map[string]any{
		"pk": paymentPK(d.PaymentID), "order_id": order.ID, "tenant": order.Tenant,
		"webhook_id": hookID, "created_at": paidAt, "ttl": now.Add(paymentDedupTTL).Unix(),
	})
	if err != nil {
		return nil, fmt.Errorf("marshal payment row %q: %w", d.PaymentID, err)
	}
	return []engine.Write{
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
	}, nil
}

// paymentLost answers a payment whose transaction's condition failed
// (condErr): a concurrent delivery won, or the payment id belongs to
// another order. The fresh order row says which.
func (a *API) paymentLost(w http.ResponseWriter, r *http.Request, d PaymentData, condErr error) {
	order, found, err := a.readOrder(r, d.OrderID)
	if err != nil || !found {
		a.unavailable(w, r, fmt.Errorf("re-read order %q after %w: %v", d.OrderID, condErr, err))
		return
	}
	if done, ok := a.alreadyPaid(w, order, d); done || !ok {
		return
	}
	writeError(w, http.StatusConflict, CodePaymentReused, fmt.Sprintf("payment %q already paid another order", d.PaymentID))
}

// refusePayment answers a payment whose amount or currency differs from its
// order's (reason "amount" or "currency"): it is never marked paid, the
// refusal is counted and logged, and com.payment_refused (no subscription)
// records it in the order's tenant's chain, where the console shows it on
// the order. The event is keyed by the webhook id, so the provider's
// retries of one delivery record it once. If the record cannot be written
// the answer is the emit's error (503 when retryable), so the provider
// retries and the refusal is not lost; once written, the answer is 422.
func (a *API) refusePayment(w http.ResponseWriter, r *http.Request, order Order, hookID string, d PaymentData, reason string) {
	a.obs.PaymentMismatch(reason)
	a.log.Warn("payment does not match its order; not marked paid", "reason", reason, "tenant", order.Tenant,
		"order", order.ID, "payment", d.PaymentID, "paid_cents", *d.AmountCents, "paid_currency", d.Currency,
		"order_cents", order.AmountCents, "order_currency", order.Currency)
	ctx := engine.WithCorrelationID(engine.WithActor(engine.WithTenant(r.Context(), order.Tenant), "payments-webhook"), order.CorrelationID)
	payload := catalog.PaymentRefused{
		OrderID: order.ID, PaymentID: d.PaymentID, WebhookID: hookID, Reason: reason,
		AmountCents: *d.AmountCents, Currency: d.Currency,
		OrderAmountCents: order.AmountCents, OrderCurrency: order.Currency,
	}
	_, err := a.cfg.Emitter.EmitEvent(ctx, engine.Event{Type: catalog.TypePaymentRefused, Payload: payload, IdempotencyKey: "payment-refused/" + hookID})
	var dup *engine.DuplicateError
	switch {
	case err == nil:
		a.obs.Emitted(catalog.TypePaymentRefused)
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
func (d PaymentData) validate() error {
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
func (a *API) alreadyPaid(w http.ResponseWriter, o Order, d PaymentData) (done, ok bool) {
	if o.Status == StatusPending {
		return false, true
	}
	if o.PaymentID == d.PaymentID {
		if reason := paymentMismatch(o, *d.AmountCents, d.Currency); reason != "" {
			a.obs.PaymentMismatch("duplicate_" + reason)
			a.log.Warn("repeated payment differs from the one that paid its order; answered duplicate",
				"reason", "duplicate_"+reason, "tenant", o.Tenant, "order", o.ID, "payment", d.PaymentID,
				"paid_cents", *d.AmountCents, "paid_currency", d.Currency,
				"order_cents", o.AmountCents, "order_currency", o.Currency)
		}
		a.obs.WebhookDuplicate()
		writeJSON(w, http.StatusOK, WebhookAnswer{Status: WebhookDuplicate, OrderID: o.ID})
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
