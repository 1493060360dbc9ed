package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Fetch reads the /status document of the agent whose status endpoint is
// at addr (host:port). raw is the document as served, for --json.
func Fetch(ctx context.Context, client *http.Client, addr string) (rep wire.GatewayStatus, raw []byte, err error) {
	url := "http://" + addr + "/status"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return wire.GatewayStatus{}, nil, fmt.Errorf("status endpoint %q: %w", addr, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return wire.GatewayStatus{}, nil, fmt.Errorf("read %s: %w (is `bowline-edge run` running with this --status-addr?)", url, err)
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return wire.GatewayStatus{}, nil, fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return wire.GatewayStatus{}, raw, fmt.Errorf("read %s: %s: %.200s", url, resp.Status, raw)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return wire.GatewayStatus{}, raw, fmt.Errorf("read %s: not a status document: %w", url, err)
	}
	return rep, raw, nil
}
