// Package fakes are stand-ins for the external services Bowline calls:
// Shopify, the shipping carrier and the notification service. Each Fake is an
// http.Handler (so tests mount it on httptest.NewServer) that `bowline dev`
// also serves on a loopback port.
//
// A Fake records every call it receives, with its idempotency key and body,
// and de-duplicates nothing: a test counts calls per key to prove the system
// called once. It can be told to fail the next N calls, or every call, with a
// given status, to exercise the adapters' retryable and terminal classes.
//
// Besides the provider routes a Fake serves a small control API under
// /_fake/ for scripts and `bowline dev`: GET /_fake/calls, POST /_fake/fail
// ({"times":N,"status":503} or {"always":true,"status":500}), POST
// /_fake/reset.
package fakes
