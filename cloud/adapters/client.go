package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// IdempotencyHeader is the header every call carries.
const IdempotencyHeader = "Idempotency-Key"

// Key is the idempotency key of one subscription's work on one event.
func Key(eventID, subscription string) string { return eventID + ":" + subscription }

// maxErrorBody bounds how much of an error response is kept.
const maxErrorBody = 512

// endpoint is one provider: a base URL and the shared HTTP client.
type endpoint struct {
	service string
	base    string
	client  *http.Client
	timeout time.Duration
	log     *slog.Logger
}

// post sends body as JSON to base+path with the idempotency key and decodes
// a 2xx JSON answer into out (when out is not nil).
func (e *endpoint) post(ctx context.Context, path, key string, body, out any) error {
	op := "POST " + path
	if e.base == "" {
		return fmt.Errorf("%s %s: %w: %w", e.service, op, ErrNoBaseURL, ErrTerminal)
	}
	if key == "" {
		return fmt.Errorf("%s %s: %w: %w", e.service, op, ErrNoIdempotencyKey, ErrTerminal)
	}
	buf, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("%s %s: encode body: %v: %w", e.service, op, err, ErrTerminal)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(e.base, "/")+path, bytes.NewReader(buf))
	if err != nil {
		return fmt.Errorf("%s %s: build request for %q: %v: %w", e.service, op, e.base, err, ErrTerminal)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(IdempotencyHeader, key)
	resp, err := e.client.Do(req)
	if err != nil {
		// Timeouts, refused connections, resets: the provider may come back.
		return fmt.Errorf("%s %s (key %s): %w: %w", e.service, op, key, err, ErrRetryable)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		serr := &StatusError{Service: e.service, Op: op, Status: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
		e.log.Debug("provider call failed", "service", e.service, "op", op, "key", key, "status", resp.StatusCode)
		return fmt.Errorf("key %s: %w", key, serr)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil && !errors.Is(err, io.EOF) {
		// The call succeeded; a garbled answer must not make us repeat it.
		e.log.Warn("provider answer not understood", "service", e.service, "op", op, "key", key, "err", err)
	}
	return nil
}
