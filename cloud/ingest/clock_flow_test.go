package ingest_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// fixRecorder also records each ack's clock fix.
type fixRecorder struct {
	*recorder
	mu    sync.Mutex
	fixes map[string][]string // by kind
}

func (r *fixRecorder) Acked(x ingest.Ack) {
	r.mu.Lock()
	r.fixes[x.Kind] = append(r.fixes[x.Kind], x.ClockFix)
	r.mu.Unlock()
	r.recorder.Acked(x)
}

// TestWrongGatewayClocksKeepTheirData runs the real ingester on the local
// stack: an event from a gateway still at 1970 is emitted on the right day
// (device_at and started_at corrected from sent_at, flagged clock_fix
// unset), its redelivery with another sent_at is a duplicate, not a
// conflict, and an event from a gateway 10 minutes ahead is accepted and
// flagged. Before sent_at the 1970 meal was filed in 1970 and the event
// from the future was dead-lettered as future_timestamp.
func TestWrongGatewayClocksKeepTheirData(t *testing.T) {
	e := newEnv(t)
	tenant, thing := uniq("t"), uniq("bowl")
	e.register(t, thing, tenant)
	base := time.Now().UTC().Truncate(time.Second)
	rec := &fixRecorder{recorder: newRecorder(), fixes: map[string][]string{}}
	e.startIngest(t, rec, func(c *ingest.Config) { c.Now = func() time.Time { return base } })
	pub := e.publisher(t)
	pub.now = func() time.Time { return base } // the rules engine's clock

	at1970 := time.Unix(0, 0).UTC()
	meal := map[string]any{"grams_eaten": 42.5, "duration_s": 95, "started_at": at1970.Add(7*time.Minute + 25*time.Second).Format(time.RFC3339Nano), "pet_tag": "tag-1"}
	msg := event(thing, 1, "meal-1.0", "bowl.meal_finished", meal)
	msg["at"] = at1970.Add(9 * time.Minute).Format(time.RFC3339Nano)
	msg["sent_at"] = at1970.Add(10 * time.Minute).Format(time.RFC3339Nano)
	publish(t, pub, topic(tenant, thing, "events"), msg)
	testkit.WaitFor(t, "the event's ack", hangGuard, func() bool { return rec.ackCount() == 1 })
	msg["sent_at"] = at1970.Add(10*time.Minute + 7*time.Second).Format(time.RFC3339Nano) // encoded again for a redelivery
	publish(t, pub, topic(tenant, thing, "events"), msg)

	ahead := event(thing, 2, "refill-2", "bowl.refilled", map[string]any{"grams_added": 200, "level_g": 450})
	ahead["at"] = base.Add(9 * time.Minute).Format(time.RFC3339Nano)
	ahead["sent_at"] = base.Add(10 * time.Minute).Format(time.RFC3339Nano)
	publish(t, pub, topic(tenant, thing, "events"), ahead)
	testkit.WaitFor(t, "3 acks", hangGuard, func() bool { return rec.ackCount() == 3 })

	if len(rec.rejected) != 0 || rec.emitted != 2 || rec.dups != 1 {
		t.Fatalf("rejected %v, emitted %d, duplicates %d; want none rejected, 2 emitted, 1 duplicate", rec.rejected, rec.emitted, rec.dups)
	}
	evs := e.events(t, tenant)
	if len(evs) != 2 {
		t.Fatalf("events of %s = %d; want 2", tenant, len(evs))
	}
	p := evs[0].Payload
	if want := base.Add(-time.Minute).Format(time.RFC3339Nano); p["device_at"] != want || p["clock_fix"] != ingest.ClockUnset {
		t.Errorf("payload %v; want device_at %s and clock_fix %s", p, want, ingest.ClockUnset)
	}
	if want := base.Add(-2*time.Minute - 35*time.Second).Format(time.RFC3339Nano); p["started_at"] != want {
		t.Errorf("started_at = %v; want %s (corrected like the event)", p["started_at"], want)
	}
	q := evs[1].Payload
	if want := base.Add(-time.Minute).Format(time.RFC3339Nano); q["device_at"] != want || q["clock_fix"] != ingest.ClockAhead {
		t.Errorf("payload %v; want device_at %s and clock_fix %s", q, want, ingest.ClockAhead)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// The redelivery and the event from ahead may be acknowledged in
	// either order.
	f := slices.Sorted(slices.Values(rec.fixes["events"]))
	if want := []string{ingest.ClockAhead, ingest.ClockUnset, ingest.ClockUnset}; !slices.Equal(f, want) {
		t.Errorf("clock fixes of the acks = %q; want %q in any order", f, want)
	}
}
