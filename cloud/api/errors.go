package api

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Stable error codes of the API.
const (
	CodeUnauthorized         = "unauthorized"
	CodeTooManyFailures      = "too_many_failures"
	CodeInvalidSignature     = "invalid_signature"
	CodeSignatureExpired     = "signature_expired"
	CodeInvalidJSON          = "invalid_json"
	CodeInvalidRequest       = "invalid_request"
	CodeBodyTooLarge         = "body_too_large"
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	CodeOrderNotFound        = "order_not_found"
	CodeAmountMismatch       = "amount_mismatch"
	CodeCurrencyMismatch     = "currency_mismatch"
	CodePriceMismatch        = "price_mismatch"
	CodeOrderAlreadyPaid     = "order_already_paid"
	CodePaymentReused        = "payment_reused"
	CodeNotConfigured        = "not_configured"
	CodeUnavailable          = "unavailable"
	CodeInternal             = "internal"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
)

// Sentinel errors of the package.
var (
	// ErrBadSignature: the webhook signature header is missing, malformed
	// or does not match the body.
	ErrBadSignature = errors.New("bad webhook signature")
	// ErrStaleSignature: the signed timestamp is outside the tolerance.
	ErrStaleSignature = errors.New("webhook timestamp outside tolerance")
	// ErrBadTokens: BOWLINE_API_TOKENS is malformed.
	ErrBadTokens = errors.New("malformed api tokens")
	// ErrShortSecret: a token or secret of the environment is shorter than
	// MinSecretLen.
	ErrShortSecret = errors.New("api secret too short")
)

// writeError writes status with the JSON error body.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, ErrorAnswer{Error: ErrorDetail{Code: code, Message: msg}})
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		buf = []byte(`{"error":{"code":"internal","message":"encode response"}}`)
	}
	writeRaw(w, status, append(buf, '\n'))
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
