package api

import "encoding/json"

// The bodies of the HTTP API, one type each, for the server and for every
// client (cloud/dev's Client, the chaos harness, tests): a field renamed
// here is renamed for all of them, and bodies_test.go pins the JSON of
// each. docs/contract.md ("HTTP API") lists the routes.
//
//	POST /v1/orders              OrderRequest -> 201 Order (rows.go)
//	POST /v1/webhooks/payments   PaymentWebhook (data: PaymentData) -> 200 WebhookAnswer
//	any route, on an error       ErrorAnswer
//
// GET /v1/ops/reconcile answers engine/reconcile's Report.

// OrderRequest is the body of POST /v1/orders. The server prices the
// order from its price list; AmountCents and Currency, when given, are
// what the client expects to pay, and the order is refused (409
// price_mismatch) when the price list says otherwise. A client leaves them
// nil to take the server's price; they are then not sent.
type OrderRequest struct {
	CustomerID  string  `json:"customer_id"`
	PetID       string  `json:"pet_id"`
	Items       []Item  `json:"items"`
	AmountCents *int64  `json:"amount_cents,omitempty"`
	Currency    *string `json:"currency,omitempty"`
}

// PaymentSucceeded is the webhook type that pays an order; other types are
// acknowledged and ignored.
const PaymentSucceeded = "payment.succeeded"

// PaymentWebhook is the body of POST /v1/webhooks/payments, as the payment
// provider signs it (Sign, SignatureHeader).
type PaymentWebhook struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Data is decoded (strictly, as PaymentData) only for Type
	// PaymentSucceeded; other types are acknowledged whatever their data.
	Data json.RawMessage `json:"data"`
}

// PaymentData is the data of a payment.succeeded webhook. AmountCents is
// required; a pointer so that a missing amount is told from 0.
type PaymentData struct {
	PaymentID   string `json:"payment_id"`
	OrderID     string `json:"order_id"`
	AmountCents *int64 `json:"amount_cents"`
	Currency    string `json:"currency"`
}

// PaymentSucceededWebhook returns the payment.succeeded webhook with id
// whose data is d, as the provider sends it.
func PaymentSucceededWebhook(id string, d PaymentData) PaymentWebhook {
	data, _ := json.Marshal(d) // strings and an *int64: it cannot fail
	return PaymentWebhook{ID: id, Type: PaymentSucceeded, Data: data}
}

// The statuses of a WebhookAnswer.
const (
	// WebhookProcessed: the payment paid its order; EventID is
	// com.payment_completed's.
	WebhookProcessed = "processed"
	// WebhookDuplicate: an earlier delivery of the same payment paid the
	// order; nothing was emitted.
	WebhookDuplicate = "duplicate"
	// WebhookIgnored: a webhook type other than payment.succeeded.
	WebhookIgnored = "ignored"
)

// WebhookAnswer is the 200 answer to POST /v1/webhooks/payments.
type WebhookAnswer struct {
	// Status is WebhookProcessed, WebhookDuplicate or WebhookIgnored.
	Status  string `json:"status"`
	OrderID string `json:"order_id,omitempty"`
	EventID string `json:"event_id,omitempty"`
}

// ErrorAnswer is the body of every error response; Code is one of the
// Code* constants.
type ErrorAnswer struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is an ErrorAnswer's error.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
