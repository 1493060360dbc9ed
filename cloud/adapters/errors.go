package adapters

import (
	"errors"
	"fmt"
)

var (
	// ErrRetryable marks a failure worth retrying: a timeout, a connection
	// error, 408, 409, 425, 429 or a 5xx (see StatusError.Retryable).
	ErrRetryable = errors.New("retryable provider error")
	// ErrTerminal marks a failure retrying cannot fix: any other 4xx, or a
	// request that cannot be built.
	ErrTerminal = errors.New("terminal provider error")
	// ErrNoBaseURL: the adapter's base URL is not configured.
	ErrNoBaseURL = errors.New("base url not configured")
	// ErrNoIdempotencyKey: a call was made without an idempotency key.
	ErrNoIdempotencyKey = errors.New("idempotency key required")
)

// StatusError is a provider answer outside 2xx. It matches ErrRetryable
// (408, 409, 425, 429, 5xx) or ErrTerminal (other statuses).
type StatusError struct {
	// Service is "shopify", "shipping" or "notify".
	Service string
	// Op names the call, e.g. "POST /orders".
	Op string
	// Status is the HTTP status code.
	Status int
	// Body is the start of the response body, for the dead letter.
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %s", e.Service, e.Op, e.Status, e.Body)
}

// Retryable reports whether the status is worth retrying:
//
//   - 408 Request Timeout: the provider gave up waiting for our request
//     (RFC 9110 15.5.9: the client "MAY repeat that request").
//   - 409 Conflict: every call carries an Idempotency-Key, and a provider
//     answers 409 when a request with the same key is still being
//     processed (draft-ietf-httpapi-idempotency-key-header, "Error
//     Scenarios"; Stripe's and Shopify's APIs do the same). The first
//     request may yet succeed, so the retry must come later, not never; a
//     409 that never clears still ends dead after the queue's last
//     receive.
//   - 425 Too Early and 429 Too Many Requests: come back later.
//   - 5xx: the provider failed.
//
// Any other 4xx is the request's fault and is terminal; a reused key with
// a different body is 422 in the same draft.
func (e *StatusError) Retryable() bool {
	switch e.Status {
	case 408, 409, 425, 429:
		return true
	}
	return e.Status >= 500
}

// Is makes errors.Is(err, ErrRetryable) or errors.Is(err, ErrTerminal) true.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrRetryable:
		return e.Retryable()
	case ErrTerminal:
		return !e.Retryable()
	}
	return false
}

// IsRetryable reports whether err is worth retrying. Errors that are not
// classified (a context that ended, for instance) count as retryable: the
// queue's receive limit still bounds them.
func IsRetryable(err error) bool {
	return err != nil && !errors.Is(err, ErrTerminal)
}
