package forward

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestDiskCapDropsAreReportedExactly fills a tiny outbox while the broker
// is down, then lets it drain: every telemetry seq of every thing is
// either received or inside exactly one bowl.telemetry_dropped range (never
// both, never neither), and every event arrives.
func TestDiskCapDropsAreReportedExactly(t *testing.T) {
	ctx := context.Background()
	o, err := outbox.Open(outbox.Config{Path: filepath.Join(t.TempDir(), "outbox.db"), MaxBytes: 64 << 10, EventReserve: 16 << 10, TelemetryTTL: -1, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	b := startBroker(t, nil)
	b.down()
	things := []string{"bowl-1", "bowl-2"}
	const perThing, chunk = 3000, 50
	events := 0
	for i := 0; i < perThing; i += chunk {
		for _, th := range things {
			batch := telemetry(th, chunk, 20*time.Millisecond)
			if i%500 == 0 {
				batch = append(batch, event(th, fmt.Sprint("refill-", i)))
				events++
			}
			if err := o.Append(ctx, batch, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, _ := o.Stats()
	if st.Telemetry.Dropped == 0 {
		t.Fatalf("no telemetry dropped under a 64 KiB cap; want drops")
	}
	runForwarder(t, Config{Broker: b.URL, Wire: WireV1, Rate: 1000, BackoffMin: 20 * time.Millisecond, BackoffMax: 50 * time.Millisecond}, o)
	b.up()
	testkit.WaitFor(t, "the outbox to drain", 60*time.Second, func() bool {
		s, _ := o.Stats()
		return s.Events.Records+s.Telemetry.Records == 0
	})
	msgs := b.rec.Messages()
	got := map[string]map[uint64]int{}
	gotEvents := 0
	for _, th := range things {
		got[th] = map[uint64]int{}
	}
	for _, m := range msgs {
		switch {
		case strings.HasSuffix(m.Topic, "/telemetry"):
			var tm wire.TelemetryMessage
			_ = json.Unmarshal(m.Payload, &tm)
			for i := range tm.Samples {
				got[tm.Thing][tm.Seq+uint64(i)]++
			}
		case strings.HasSuffix(m.Topic, "/events"):
			var em wire.EventMessage
			_ = json.Unmarshal(m.Payload, &em)
			if em.Type != outbox.DroppedType {
				gotEvents++
				continue
			}
			var r wire.TelemetryDropped
			if err := json.Unmarshal(em.Data, &r); err != nil {
				t.Fatal(err)
			}
			if r.ToSeq-r.FromSeq+1 != r.Count {
				t.Fatalf("drop report %+v: count is not the range's size", r)
			}
			for s := r.FromSeq; s <= r.ToSeq; s++ {
				got[em.Thing][s] += 1000 // marks "reported dropped"
			}
		}
	}
	if gotEvents != events {
		t.Fatalf("events received = %d; want all %d", gotEvents, events)
	}
	dropped := 0
	for _, th := range things {
		for s := uint64(1); s <= perThing; s++ {
			// A redelivered message may repeat a sample (same (thing, seq),
			// dropped by the cloud); a sample both received and reported
			// dropped, or reported twice, is a lie.
			switch n := got[th][s]; {
			case n == 0:
				t.Fatalf("%s telemetry seq %d neither received nor reported dropped", th, s)
			case n == 1000:
				dropped++
			case n > 1000:
				t.Fatalf("%s telemetry seq %d: count %d; want received or reported dropped once, not both", th, s, n)
			}
		}
	}
	if int64(dropped) != st.Telemetry.Dropped {
		t.Fatalf("reported dropped = %d; outbox counted %d", dropped, st.Telemetry.Dropped)
	}
	t.Logf("%d of %d samples dropped under the cap and reported; %d events delivered", dropped, 2*perThing, events)
}
