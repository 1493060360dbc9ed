package agent

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/forward"
	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// The agent's metrics observe its outbox (Config.Outbox.Observer): a
// record appended is a group commit and a backlog on /metrics.
func TestMetricsObserveTheOutbox(t *testing.T) {
	dir := t.TempDir()
	a, err := New(Config{
		Outbox:     outbox.Config{Path: filepath.Join(dir, "outbox.db")},
		Forward:    forward.Config{Broker: "tcp://127.0.0.1:1", Tenant: "t1", ClientID: "gw-m", BackoffMin: time.Second, BackoffMax: time.Second, Rule: "bowline_test_telemetry"},
		StatusAddr: "127.0.0.1:0",
		Inputs:     []Input{{Kind: InputUnix, Path: filepath.Join(dir, "no-bowl.sock")}},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { _ = a.Run(ctx) })
	e := outbox.Entry{Lane: outbox.Events, Thing: "gw-m:bowl-1", At: time.Now(), Type: "bowl.refilled", ID: "r-1", Data: []byte(`{"grams_added":120,"level_g":400}`)}
	if err := a.Outbox().Append(ctx, []outbox.Entry{e}, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"bowline_edge_outbox_commits_total 1", `bowline_edge_outbox_appended_total{lane="all"} 1`, `bowline_edge_outbox_backlog{lane="events"} 1`}
	testkit.WaitFor(t, "the append on /metrics", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + a.StatusAddr() + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				return false
			}
		}
		return true
	})
}
