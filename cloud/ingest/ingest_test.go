package ingest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
	// The digest that told the two apart rides on the engine's dedup row:
	// ingest writes no row of its own for it (one write fewer an event).
	out, err := e.ddb.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(lstest.Names(t).InboxTable()),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: ingest.DigestPK(tenant, thing, "meal-1")}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item != nil {
		t.Errorf("digest row %s = %v; want none (the digest is the dedup row's fingerprint)", ingest.DigestPK(tenant, thing, "meal-1"), out.Item)
	}
}

// A thing publishing under another tenant's topic is rejected and nothing is
// emitted; so are the other bad messages, each with its
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
	future := event(thing, 3, "empty-3", "bowl.empty", map[string]any{})
	future["at"] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	big := event(thing, 4, "fault-4", "bowl.device_fault", map[string]any{"code": "E_SCALE", "detail": strings.Repeat("x", 2048)})
	cases := []struct {
		topic   string
		payload any
		reason  ingest.Reason
	}{
		{topic(tenantB, thing, "events"), ok, ingest.ReasonTenantMismatch},
		{topic(tenantB, thing, "events"), event(thing, 2, "empty-2", "bowl.empty", map[string]any{}), ingest.ReasonTenantMismatch},
		{topic(tenantA, stranger, "events"), event(stranger, 1, "x", "bowl.empty", map[string]any{}), ingest.ReasonUnknownThing},
		{topic(tenantA, thing, "events"), `{"v":1,"thing":`, ingest.ReasonMalformedJSON},
		{topic(tenantA, thing, "events"), `{"v":2,"thing":"` + thing + `"}`, ingest.ReasonBadVersion},
		{topic(tenantA, thing, "events"), event("other", 1, "x", "bowl.empty", map[string]any{}), ingest.ReasonThingMismatch},
		{topic(tenantA, thing, "events"), event(thing, 2, "x", "bowl.meal_finished", map[string]any{"grams_eaten": 1}), ingest.ReasonInvalid},
		{topic(tenantA, thing, "events"), future, ingest.ReasonFutureTimestamp},
		{topic(tenantA, thing, "events"), big, ingest.ReasonOversize},
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

// A hole in a thing's event seqs that outlives the grace period raises
// bowl.data_gap once, on the events lane.
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
	step := func(payload any) {
		t.Helper()
		n := rec.ackCount()
		publish(t, pub, topic(tenant, thing, "events"), payload)
		testkit.WaitFor(t, "ack", hangGuard, func() bool { return rec.ackCount() == n+1 })
	}
	step(event(thing, 1, "refill-1", "bowl.refilled", map[string]any{"grams_added": 100, "level_g": 300}))
	step(event(thing, 2, "empty-1", "bowl.empty", map[string]any{}))
	step(event(thing, 3, "telemetry_dropped-11-15", "bowl.telemetry_dropped", map[string]any{"from_seq": 11, "to_seq": 15, "count": 5, "reason": "disk_cap"}))
	step(event(thing, 6, "empty-2", "bowl.empty", map[string]any{}))

	gaps := func() []string { return e.dataGaps(t, tenant) }
	testkit.WaitFor(t, "a data gap", hangGuard, func() bool { return len(gaps()) > 0 })
	// A raised hole is closed in the row: another check raises nothing more.
	testkit.WaitFor(t, "the events row closed", hangGuard, func() bool {
		sp := e.seqSpans(t, thing, ingest.LaneEvents)
		return len(sp) == 1 && sp[0] == [2]uint64{1, 6}
	})
	time.Sleep(200 * time.Millisecond) // a few more gap checks
	if got, want := gaps(), []string{"events 4-5"}; !slices.Equal(got, want) {
		t.Errorf("bowl.data_gap events = %v; want %v (telemetry_dropped names telemetry seqs, which are cloud/durable's)", got, want)
	}
}
