package ingest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/deploy/cfn/iamtest"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func meal(grams float64) map[string]any {
	return map[string]any{"grams_eaten": grams, "duration_s": 95, "started_at": time.Now().Add(-3 * time.Minute).UTC().Format(time.RFC3339Nano), "pet_tag": "tag-1"}
}

// The same MQTT event published three times gives one emitted event.
func TestRedeliveredEventEmitsOnce(t *testing.T) {
	e := newEnv(t)
	tenant, thing := uniq("t"), uniq("bowl")
	e.register(t, thing, tenant)
	rec := newRecorder()
	e.startIngest(t, rec, nil)
	pub := e.publisher(t)
	msg := event(thing, 1, "meal-1", "bowl.meal_finished", meal(42.5))
	for range 3 {
		publish(t, pub, topic(tenant, thing, "events"), msg)
	}
	testkit.WaitFor(t, "3 acks", hangGuard, func() bool { return rec.ackCount() == 3 })
	evs := e.events(t, tenant)
	if len(evs) != 1 {
		t.Fatalf("events of %s = %d; want 1", tenant, len(evs))
	}
	ev := evs[0]
	if ev.Type != "bowl.meal_finished" || ev.Payload["thing"] != thing || ev.Payload["grams_eaten"] != 42.5 || ev.Payload["device_event_id"] != "meal-1" {
		t.Errorf("emitted %s %v; want bowl.meal_finished from %s with grams_eaten 42.5 and device_event_id meal-1", ev.Type, ev.Payload, thing)
	}
	if rec.emitted != 1 || rec.dups != 2 {
		t.Errorf("emitted %d, duplicates %d; want 1 and 2", rec.emitted, rec.dups)
	}
}

// A repeated (thing, id) with a different payload is a recorded conflict.
// The ingest role must allow every AWS call this makes (iamtest).
func TestConflictingRepeatIsDeadLettered(t *testing.T) {
	iamtest.Record(t)
	e := newEnv(t)
	tenant, thing := uniq("t"), uniq("bowl")
	e.register(t, thing, tenant)
	rec := newRecorder()
	e.startIngest(t, rec, nil)
	pub := e.publisher(t)
	publish(t, pub, topic(tenant, thing, "events"), event(thing, 1, "meal-1", "bowl.meal_finished", meal(42.5)))
	testkit.WaitFor(t, "first ack", hangGuard, func() bool { return rec.ackCount() == 1 })
	publish(t, pub, topic(tenant, thing, "events"), event(thing, 1, "meal-1", "bowl.meal_finished", meal(99)))
	testkit.WaitFor(t, "second ack", hangGuard, func() bool { return rec.ackCount() == 2 })
	if n := len(e.events(t, tenant)); n != 1 {
		t.Fatalf("events of %s = %d; want 1", tenant, n)
	}
	if rec.rejected[ingest.ReasonConflict] != 1 {
		t.Errorf("conflicts = %d; want 1 (rejections %v)", rec.rejected[ingest.ReasonConflict], rec.rejected)
	}
	letters, err := e.letters.Tenant(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) != 1 || !strings.HasPrefix(letters[0].Error, string(ingest.ReasonConflict)) || letters[0].Subscription != ingest.LetterSubscription {
		t.Errorf("dead letters of %s = %+v; want one conflict letter", tenant, letters)
	}
}

// A thing publishing under another tenant's topic is rejected and nothing is
// emitted or sent to Kinesis; so are the other bad messages, each with its
// reason, and every one is acknowledged. The ingest role must allow every
// AWS call this makes, dead letters included (iamtest).
func TestBadMessagesAreRejectedAndAcked(t *testing.T) {
	iamtest.Record(t)
	e := newEnv(t)
	tenantA, tenantB, thing, stranger := uniq("t"), uniq("t"), uniq("bowl"), uniq("bowl")
	e.register(t, thing, tenantA)
	rec := newRecorder()
	e.startIngest(t, rec, func(c *ingest.Config) { c.MaxPayload = 2048 })
	pub := e.publisher(t)
	ok := event(thing, 1, "meal-1", "bowl.meal_finished", meal(10))
	cases := []struct {
		topic   string
		payload any
		reason  ingest.Reason
	}{
		{topic(tenantB, thing, "events"), ok, ingest.ReasonTenantMismatch},
		{topic(tenantB, thing, "telemetry"), telemetry(thing, 1, 2, time.Now()), ingest.ReasonTenantMismatch},
		{topic(tenantA, stranger, "events"), event(stranger, 1, "x", "bowl.empty", map[string]any{}), ingest.ReasonUnknownThing},
		{topic(tenantA, thing, "events"), `{"v":1,"thing":`, ingest.ReasonMalformedJSON},
		{topic(tenantA, thing, "events"), `{"v":2,"thing":"` + thing + `"}`, ingest.ReasonBadVersion},
		{topic(tenantA, thing, "events"), event("other", 1, "x", "bowl.empty", map[string]any{}), ingest.ReasonThingMismatch},
		{topic(tenantA, thing, "events"), event(thing, 2, "x", "bowl.meal_finished", map[string]any{"grams_eaten": 1}), ingest.ReasonInvalid},
		{topic(tenantA, thing, "telemetry"), telemetry(thing, 1, 1, time.Now().Add(time.Hour)), ingest.ReasonFutureTimestamp},
		{topic(tenantA, thing, "telemetry"), telemetry(thing, 1, 40, time.Now()), ingest.ReasonOversize},
	}
	for _, c := range cases {
		publish(t, pub, c.topic, c.payload)
	}
	testkit.WaitFor(t, "every bad message acked", hangGuard, func() bool { return rec.ackCount() == len(cases) })
	want := map[ingest.Reason]int{}
	for _, c := range cases {
		want[c.reason]++
	}
	for r, n := range want {
		if rec.rejected[r] != n {
			t.Errorf("rejections for %s = %d; want %d", r, rec.rejected[r], n)
		}
	}
	for _, tn := range []string{tenantA, tenantB} {
		if n := len(e.events(t, tn)); n != 0 {
			t.Errorf("events of %s = %d; want 0", tn, n)
		}
	}
	if seen, _ := e.streamSamples(t, lstest.Names(t).TelemetryStream(), thing); len(seen) != 0 {
		t.Errorf("kinesis holds %d samples of %s; want none", len(seen), thing)
	}
	poison, err := e.letters.Poison(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mismatch := 0
	for _, l := range poison {
		if strings.HasPrefix(l.MessageID, topic(tenantB, thing, "")) && strings.HasPrefix(l.Error, string(ingest.ReasonTenantMismatch)) {
			mismatch++
		}
	}
	if mismatch != 2 {
		t.Errorf("poison letters for %s under %s = %d; want 2", thing, tenantB, mismatch)
	}
	letters, err := e.letters.Tenant(context.Background(), tenantA)
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) != 6 {
		t.Errorf("dead letters of %s = %d; want 6 (the verified thing's bad messages)", tenantA, len(letters))
	}
}

// Every telemetry sample reaches Kinesis, by (thing, seq), with the tenant.
func TestEveryTelemetrySampleReachesKinesis(t *testing.T) {
	e := newEnv(t)
	tenant := uniq("t")
	things := []string{uniq("bowl"), uniq("bowl")}
	for _, th := range things {
		e.register(t, th, tenant)
	}
	rec := newRecorder()
	e.startIngest(t, rec, nil)
	pub := e.publisher(t)
	const msgs, per = 100, 5
	at := time.Now().Add(-time.Hour)
	for i := range msgs {
		for _, th := range things {
			publish(t, pub, topic(tenant, th, "telemetry"), telemetry(th, uint64(1+i*per), per, at))
		}
	}
	testkit.WaitFor(t, "every telemetry message acked", hangGuard, func() bool { return rec.ackCount() == msgs*len(things) })
	for _, th := range things {
		seen, tenants := e.streamSamples(t, lstest.Names(t).TelemetryStream(), th)
		for s := uint64(1); s <= msgs*per; s++ {
			if seen[s] == 0 {
				t.Errorf("sample %s seq %d not in Kinesis", th, s)
			}
		}
		if len(tenants) != 1 || !tenants[tenant] {
			t.Errorf("tenants in %s records = %v; want only %s", th, tenants, tenant)
		}
	}
}

// Holes in a thing's seqs that outlive the grace period raise bowl.data_gap,
// once per hole; telemetry the edge reported dropped is not a hole.
func TestDataGapRaised(t *testing.T) {
	e := newEnv(t)
	tenant, thing := uniq("t"), uniq("bowl")
	e.register(t, thing, tenant)
	rec := newRecorder()
	e.startIngest(t, rec, func(c *ingest.Config) {
		c.GapGrace = 10 * time.Millisecond
		c.GapFlushInterval = 50 * time.Millisecond
	})
	pub := e.publisher(t)
	at := time.Now().Add(-time.Hour)
	step := func(tp string, payload any) {
		t.Helper()
		n := rec.ackCount()
		publish(t, pub, tp, payload)
		testkit.WaitFor(t, "ack", hangGuard, func() bool { return rec.ackCount() == n+1 })
	}
	step(topic(tenant, thing, "events"), event(thing, 1, "refill-1", "bowl.refilled", map[string]any{"grams_added": 100, "level_g": 300}))
	step(topic(tenant, thing, "events"), event(thing, 2, "empty-1", "bowl.empty", map[string]any{}))
	step(topic(tenant, thing, "telemetry"), telemetry(thing, 1, 10, at))
	step(topic(tenant, thing, "events"), event(thing, 3, "telemetry_dropped-11-15", "bowl.telemetry_dropped", map[string]any{"from_seq": 11, "to_seq": 15, "count": 5, "reason": "disk_cap"}))
	step(topic(tenant, thing, "telemetry"), telemetry(thing, 21, 10, at))
	step(topic(tenant, thing, "events"), event(thing, 6, "empty-2", "bowl.empty", map[string]any{}))

	gaps := func() map[string][2]float64 {
		got := map[string][2]float64{}
		for _, ev := range e.events(t, tenant) {
			if ev.Type == catalog.TypeDataGap {
				got[ev.Payload["lane"].(string)] = [2]float64{ev.Payload["from_seq"].(float64), ev.Payload["to_seq"].(float64)}
			}
		}
		return got
	}
	testkit.WaitFor(t, "two data gaps", hangGuard, func() bool { return len(gaps()) == 2 })
	want := map[string][2]float64{"events": {4, 5}, "telemetry": {16, 20}}
	got := gaps()
	for lane, r := range want {
		if got[lane] != r {
			t.Errorf("data gap of lane %s = %v; want %v", lane, got[lane], r)
		}
	}
	n := 0
	for _, ev := range e.events(t, tenant) {
		if ev.Type == catalog.TypeDataGap {
			n++
		}
	}
	if n != 2 {
		t.Errorf("bowl.data_gap events = %d; want 2", n)
	}
}
