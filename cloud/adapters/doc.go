// Package adapters are Bowline's HTTP clients for the external services its
// DURABLE subscribers call: Shopify (order mirror), shipping (shipment
// booking) and notifications (buyer, owner and support messages).
//
// Every call carries the header
//
//	Idempotency-Key: <event_id>:<subscription>
//
// so a handler that runs twice for one event (a worker killed after the call
// but before the inbox row was completed) asks the provider for the same
// effect twice, and a provider that honours the header does it once.
//
// Errors are classified for the worker: a timeout, a connection failure,
// 408, 409 (the same Idempotency-Key still in progress), 425, 429 and 5xx
// are retryable (the queue redelivers); any other 4xx is terminal
// (retrying cannot fix the request). IsRetryable reports which.
//
// Base URLs come from BOWLINE_SHOPIFY_URL, BOWLINE_SHIPPING_URL and
// BOWLINE_NOTIFY_URL (ConfigFromEnv); `bowline dev` points them at the fakes
// in cloud/fakes.
package adapters
