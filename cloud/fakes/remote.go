package fakes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// FailRemote tells the fake at baseURL (a running `bowline dev`'s, from
// BOWLINE_SHOPIFY_URL and the like) to answer status to its next times
// provider calls, or to every call with always; times 0 and not always
// heals it. It is POST /_fake/fail.
func FailRemote(ctx context.Context, client *http.Client, baseURL string, times int, always bool, status int) error {
	body, _ := json.Marshal(failRequest{Times: times, Always: always, Status: status})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/_fake/fail", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("fake at %q: %w", baseURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("fake at %s: %w (is bowline dev running, and this shell's provider URL its?)", baseURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("fake at %s: %s: %s", baseURL, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
