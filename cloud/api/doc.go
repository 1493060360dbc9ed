// Package api is Bowline's HTTP API (`bowline api`): orders, the payment
// provider's webhook, the operator's reconcile report and liveness. Its
// Prometheus metrics are not on this listener: MetricsHandler serves them on
// another (bowline api --metrics-addr).
//
//	POST /v1/orders              bearer token -> tenant; order row + com.order_created
//	POST /v1/webhooks/payments   HMAC-SHA256 signature; order paid + com.payment_completed (or com.payment_refused)
//	GET  /v1/ops/reconcile       operator token; chains, dead letters, DLQ depth
//	GET  /healthz                liveness
//
// The bodies are this package's types, for the server and its clients
// alike: OrderRequest and Order, PaymentWebhook with PaymentData and
// WebhookAnswer, ErrorAnswer.
//
// Other handlers can be mounted beside these routes (Config.Mounts):
// cloud/app mounts the web console under /console/ there, unless it is
// served on a listener of its own or nowhere. This package does not know
// the console.
//
// Every state change goes through the engine: the business row (the order,
// the paid mark, the idempotency and payment dedup rows) and its event commit
// in one engine.EmitEvent transaction, so an order never exists without its
// event and a payment is never marked without com.payment_completed.
//
// # Idempotency
//
// POST /v1/orders honours an Idempotency-Key header per tenant: the key, the
// hash of the body's RFC 8785 canonical form and the response are stored in
// the inbox table in the order's transaction. The same key with the same body
// replays the first response (header Idempotent-Replayed: true); the same key
// with another body is 422 idempotency_key_reused.
//
// The webhook is idempotent by payment id: a dedup row PAYMENT#<payment_id>
// commits with the order update, so a repeated delivery emits nothing.
//
// # Errors
//
// Every error is JSON {"error":{"code":"...","message":"..."}} (ErrorAnswer);
// the codes are the Code* constants and never change meaning.
package api
