package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// StatusPath is where the agent serves its GatewayStatus.
const StatusPath = "/status"

// Why FetchStatus failed. Each comes wrapped with the URL it read.
var (
	// ErrStatusUnreachable is a request that got no whole answer:
	// refused, timed out, or broken while the body was read.
	ErrStatusUnreachable = errors.New("unreachable")
	// ErrStatusAnswer is an answer other than 200 OK.
	ErrStatusAnswer = errors.New("answered")
	// ErrNotStatus is a body that is not a JSON GatewayStatus.
	ErrNotStatus = errors.New("not a status document")
	// ErrStatusTooLarge is a body longer than the caller's limit.
	ErrStatusTooLarge = errors.New("status document too large")
)

// FetchStatus reads the /status document of the agent whose status
// endpoint is at base, a URL such as "http://127.0.0.1:9110" (a trailing
// slash is ignored; StatusPath is appended). It is the one reader of the
// document: the agent's `bowline-edge status`, the cloud console and the
// chaos harness all use it. raw is the body as served (for --json), also
// on ErrStatusAnswer. A body over limit bytes is refused, not cut.
// client nil means http.DefaultClient; a deadline comes from ctx or the
// client.
func FetchStatus(ctx context.Context, client *http.Client, base string, limit int64) (st GatewayStatus, raw []byte, err error) {
	if client == nil {
		client = http.DefaultClient
	}
	url := strings.TrimRight(base, "/") + StatusPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return GatewayStatus{}, nil, fmt.Errorf("status endpoint %q: %w", base, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return GatewayStatus{}, nil, fmt.Errorf("read %s: %w: %w", url, ErrStatusUnreachable, err)
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return GatewayStatus{}, nil, fmt.Errorf("read %s: %w: body: %w", url, ErrStatusUnreachable, err)
	}
	if int64(len(raw)) > limit {
		return GatewayStatus{}, nil, fmt.Errorf("read %s: %w: over %d bytes", url, ErrStatusTooLarge, limit)
	}
	if resp.StatusCode != http.StatusOK {
		return GatewayStatus{}, raw, fmt.Errorf("read %s: %w %s: %.200s", url, ErrStatusAnswer, resp.Status, raw)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return GatewayStatus{}, raw, fmt.Errorf("read %s: %w: %w", url, ErrNotStatus, err)
	}
	return st, raw, nil
}
