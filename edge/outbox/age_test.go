package outbox

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// TestClockStepDoesNotExpireBacklog: a gateway booted with its clock at
// 1970 buffers telemetry offline, then NTP steps the clock forward by 56
// years. The backlog waited seconds, not years: Expire must keep it. Only
// time on the age clock (Config.Elapsed) counts.
func TestClockStepDoesNotExpireBacklog(t *testing.T) {
	ctx := context.Background()
	wall := time.Unix(42, 0).UTC() // booted without a clock
	var mono time.Duration
	path := filepath.Join(t.TempDir(), "outbox.db")
	cfg := Config{Path: path, TelemetryTTL: time.Hour, Now: func() time.Time { return wall }, Elapsed: func() time.Duration { return mono }}
	o := openTest(t, cfg)
	if err := o.Append(ctx, samples("bowl-a", 5, wall), nil); err != nil {
		t.Fatal(err)
	}
	mono += 10 * time.Second
	wall = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC) // the NTP step
	if err := o.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := o.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Telemetry.Records != 5 || st.Telemetry.Dropped != 0 {
		t.Fatalf("after a forward clock step: telemetry %+v; want 5 records, 0 dropped", st.Telemetry)
	}

	// The age clock survives a restart: 50 more minutes in this run and
	// 20 in the next make 70 minutes of waiting, past the 1 h TTL.
	mono += 50 * time.Minute
	if err := o.Expire(ctx); err != nil { // persists the age clock
		t.Fatal(err)
	}
	o.Close()
	mono = 0 // a new boot: the monotonic clock starts again
	o = openTest(t, cfg)
	mono += 20 * time.Minute
	if err := o.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	ev, _ := o.Events(ctx, "bowl-a", 0, 10)
	var r wire.TelemetryDropped
	if len(ev) != 1 || json.Unmarshal(ev[0].Data, &r) != nil || r.Count != 5 || r.Reason != ReasonTTL {
		t.Fatalf("after 70 min on the age clock: drop events %+v; want one ttl report of 5", ev)
	}
}
