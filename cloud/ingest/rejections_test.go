package ingest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/internal/faultproxy"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// dynamoFaults is a DynamoDB double at the HTTP layer: calls its rule
// picks (by operation and table) are answered with the fault, exactly as
// DynamoDB answers them (HTTP 400, "__type" and "message"; the developer
// guide's "Error handling" page); every other call goes to DynamoDB Local.
// It stands in for what the emulator cannot do: deny one role one table.
type dynamoFaults struct {
	next http.RoundTripper

	mu    sync.Mutex
	rule  func(op, table string) (faultproxy.Fault, bool)
	calls map[string]int // "op table" -> calls seen
}

func (d *dynamoFaults) set(rule func(op, table string) (faultproxy.Fault, bool)) {
	d.mu.Lock()
	d.rule = rule
	d.mu.Unlock()
}

func (d *dynamoFaults) count(op, table string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[op+" "+table]
}

func (d *dynamoFaults) RoundTrip(r *http.Request) (*http.Response, error) {
	op := faultproxy.Operation(r)
	if !strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_") || r.Body == nil {
		return d.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in struct{ TableName string }
	_ = json.Unmarshal(body, &in)
	d.mu.Lock()
	if d.calls == nil {
		d.calls = map[string]int{}
	}
	d.calls[op+" "+in.TableName]++
	rule := d.rule
	d.mu.Unlock()
	if rule != nil {
		if f, ok := rule(op, in.TableName); ok {
			b := fmt.Sprintf(`{"__type":%q,"message":%q}`, f.Type, f.Message)
			return &http.Response{StatusCode: f.Status, Status: http.StatusText(f.Status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Errortype": {f.Type}},
				Body:   io.NopCloser(strings.NewReader(b)), ContentLength: int64(len(b)), Request: r}, nil
		}
	}
	return d.next.RoundTrip(r)
}

// withFaults is e with its AWS clients going through a dynamoFaults.
func withFaults(e env) (env, *dynamoFaults) {
	d := &dynamoFaults{next: http.DefaultTransport}
	e.cfg = e.cfg.Copy()
	e.cfg.HTTPClient = &http.Client{Transport: d}
	return e, d
}

// failRecorder is a recorder that also counts failures.
type failRecorder struct {
	*recorder
	fmu        sync.Mutex
	held       map[string]int // "op/cause"
	lost       int
	suppressed int
}

func newFailRecorder() *failRecorder {
	return &failRecorder{recorder: newRecorder(), held: map[string]int{}}
}

func (f *failRecorder) Held(op, cause string) { f.fmu.Lock(); f.held[op+"/"+cause]++; f.fmu.Unlock() }
func (f *failRecorder) LetterLost(ingest.Reason) {
	f.fmu.Lock()
	f.lost++
	f.fmu.Unlock()
}
func (f *failRecorder) Suppressed(ingest.Reason) {
	f.fmu.Lock()
	f.suppressed++
	f.fmu.Unlock()
}
func (f *failRecorder) counts() (held map[string]int, lost, suppressed int) {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	held = map[string]int{}
	for k, v := range f.held {
		held[k] = v
	}
	return held, f.lost, f.suppressed
}

var _ ingest.Observer = (*failRecorder)(nil)

func fastRetries(c *ingest.Config) { c.RetryMax = 20 * time.Millisecond }

// DynamoDB refusing Emit's transaction for AccessDenied or a missing table
// is not the event's fault: the message is held (unacknowledged, retried,
// counted as held with cause unavailable), never dead-lettered, and is
// emitted once the cause is fixed.
func TestEmitInfrastructureErrorHoldsMessage(t *testing.T) {
	for _, fault := range []faultproxy.Fault{faultproxy.AccessDenied, faultproxy.TableNotFound} {
		t.Run(fault.Type, func(t *testing.T) {
			e, faults := withFaults(newEnv(t))
			tenant, thing := uniq("t"), uniq("bowl")
			e.register(t, thing, tenant)
			faults.set(func(op, table string) (faultproxy.Fault, bool) {
				return fault, op == "TransactWriteItems" && table == "" // TransactWriteItems names its tables per item
			})
			rec := newFailRecorder()
			e.startIngest(t, rec, fastRetries)
			pub := e.publisher(t)
			publish(t, pub, topic(tenant, thing, "events"), event(thing, 1, "meal-1", "bowl.meal_finished", meal(42.5)))
			testkit.WaitFor(t, "the message to be held through retries", hangGuard, func() bool {
				held, _, _ := rec.counts()
				return held["emit/unavailable"] >= 3 || rec.ackCount() > 0
			})
			if n := rec.ackCount(); n != 0 {
				t.Fatalf("acks while Emit is refused = %d; want 0 (the message is held)", n)
			}
			if letters, err := e.letters.Tenant(context.Background(), tenant); err != nil || len(letters) != 0 {
				t.Fatalf("dead letters while Emit is refused = %+v, %v; want none", letters, err)
			}
			faults.set(nil)
			testkit.WaitFor(t, "the ack once DynamoDB accepts", hangGuard, func() bool { return rec.ackCount() == 1 })
			if n := len(e.events(t, tenant)); n != 1 {
				t.Errorf("events of %s = %d; want 1", tenant, n)
			}
			if letters, err := e.letters.Tenant(context.Background(), tenant); err != nil || len(letters) != 0 {
				t.Errorf("dead letters after recovery = %+v, %v; want none", letters, err)
			}
		})
	}
}

// itemSize is a DynamoDB item's size as DynamoDB counts it toward the
// 400 KB limit: attribute names plus values (strings and binaries by
// their bytes, numbers about by their digits).
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberB:
			n += len(v.Value)
		case *types.AttributeValueMemberN:
			n += len(v.Value)
		default:
			n++
		}
	}
	return n
}

// A 125 KB message whose bytes are not UTF-8, quoted by its rejection
// (each invalid byte became U+FFFD, three bytes, and the reason quotes the
// field), once made a 440 KB letter: over DynamoDB's 400 KB item limit, so
// it could never be written. Now its letter keeps the message whole as
// binary with its sha256, a reason of at most 1 KiB, and is written.
func TestHugeInvalidUTF8MessageLetterFits(t *testing.T) {
	e := newEnv(t)
	tenant, thing := uniq("t"), uniq("bowl")
	e.register(t, thing, tenant)
	rec := newFailRecorder()
	e.startIngest(t, rec, fastRetries)
	ev, err := json.Marshal(event(thing, 1, "e1", "TYPEHERE", map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	raw := bytes.Replace(ev, []byte("TYPEHERE"), bytes.Repeat([]byte{0xff}, 125<<10), 1)
	publish(t, e.publisher(t), topic(tenant, thing, "events"), raw)
	testkit.WaitFor(t, "the rejection's ack", hangGuard, func() bool { return rec.ackCount() == 1 })
	if _, lost, _ := rec.counts(); lost != 0 {
		t.Fatalf("letters lost = %d; want 0 (the letter fits)", lost)
	}
	out, err := e.ddb.Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(lstest.Names(t).DeadLettersTable()),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "TENANT#" + tenant}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 {
		t.Fatalf("dead letters of %s = %d; want 1", tenant, len(out.Items))
	}
	if size := itemSize(out.Items[0]); size >= 330<<10 {
		t.Errorf("dead letter item = %d bytes; want well under DynamoDB's 400 KB", size)
	}
	letters, err := e.letters.Tenant(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	l := letters[0]
	sum := sha256.Sum256(raw)
	if !bytes.Equal(l.Raw, raw) || l.RawSize != len(raw) || l.RawSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("letter raw = %d bytes (size %d, sha256 %s); want the message whole: %d bytes, sha256 %x", len(l.Raw), l.RawSize, l.RawSHA256, len(raw), sum)
	}
	if len(l.Error) > deadletter.MaxError || !strings.HasPrefix(l.Error, string(ingest.ReasonUnknownType)) {
		t.Errorf("letter error = %d bytes %.60q; want an unknown_type reason of at most %d bytes", len(l.Error), l.Error, deadletter.MaxError)
	}
	if d := l.ExpiresAt.Sub(l.At); d <= deadletter.TTL-time.Second || d > deadletter.TTL {
		t.Errorf("letter expires %v after it was written; want the TTL %v", l.ExpiresAt.Sub(l.At), deadletter.TTL)
	}
}

// A dead_letters table ingest may not write (AccessDenied on its PutItem)
// must not stall ingest: each rejected message is held for a bounded
// number of attempts, by at most MaxHeld at once, then acknowledged
// without its letter (counted as lost), and another device's events keep
// flowing. (AWS IoT Core sends a client nothing new while 100 of its QoS 1
// messages are unacknowledged, so before, a hundred bad messages retried
// forever stopped ingest for every tenant.)
func TestDeadLetterOutageDoesNotStallIngest(t *testing.T) {
	e, faults := withFaults(newEnv(t))
	tenant, bad, good := uniq("t"), uniq("bad"), uniq("good")
	e.register(t, bad, tenant)
	e.register(t, good, tenant)
	letters := lstest.Names(t).DeadLettersTable()
	faults.set(func(op, table string) (faultproxy.Fault, bool) {
		return faultproxy.AccessDenied, op == "PutItem" && table == letters
	})
	rec := newFailRecorder()
	e.startIngest(t, rec, func(c *ingest.Config) {
		fastRetries(c)
		c.Rejections = ingest.RejectionConfig{LetterAttempts: 3, MaxHeld: 2, PerDevice: 1000}
	})
	pub := e.publisher(t)
	const nBad, nGood = 30, 5
	for i := range nBad {
		publish(t, pub, topic(tenant, bad, "events"), event(bad, 0, fmt.Sprintf("x%d", i), "bowl.meal_finished", meal(1))) // seq 0: invalid
	}
	for i := range nGood {
		publish(t, pub, topic(tenant, good, "events"), event(good, uint64(i+1), fmt.Sprintf("m%d", i), "bowl.meal_finished", meal(10)))
	}
	// Bounded: each bad message costs at most LetterAttempts writes with
	// backoff capped at RetryMax; a minute is ample, forever is the bug.
	testkit.WaitFor(t, "every message acknowledged", time.Minute, func() bool { return rec.ackCount() == nBad+nGood })
	held, lost, _ := rec.counts()
	if lost != nBad {
		t.Errorf("letters lost = %d; want %d (every bad message acknowledged without its letter)", lost, nBad)
	}
	if n := faults.count("PutItem", letters); n > nBad*3 {
		t.Errorf("dead-letter writes = %d; want at most %d (LetterAttempts each)", n, nBad*3)
	}
	if held["dead_letter/unavailable"] == 0 {
		t.Errorf("held retries = %v; want some dead_letter/unavailable (the write is retried while it may recover)", held)
	}
	if n := len(e.events(t, tenant)); n != nGood {
		t.Errorf("events of %s = %d; want %d from the good device", tenant, n, nGood)
	}
}

// One device's rejections write at most PerDevice letters per window and
// one summary letter; the rest are acknowledged and counted.
func TestRejectionRateLimitWritesOneSummary(t *testing.T) {
	e := newEnv(t)
	tenant, thing := uniq("t"), uniq("bowl")
	e.register(t, thing, tenant)
	rec := newFailRecorder()
	e.startIngest(t, rec, func(c *ingest.Config) {
		c.Rejections = ingest.RejectionConfig{PerDevice: 3, Window: time.Hour}
	})
	pub := e.publisher(t)
	const n = 10
	for i := range n {
		publish(t, pub, topic(tenant, thing, "events"), event(thing, 0, fmt.Sprintf("x%d", i), "bowl.meal_finished", meal(1)))
	}
	testkit.WaitFor(t, "every rejection acknowledged", hangGuard, func() bool { return rec.ackCount() == n })
	letters, err := e.letters.Tenant(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	summaries := 0
	for _, l := range letters {
		if strings.HasPrefix(l.Error, string(ingest.ReasonRateLimited)) {
			summaries++
		}
	}
	if len(letters) != 4 || summaries != 1 {
		t.Errorf("dead letters = %d with %d summaries; want 3 letters and 1 summary", len(letters), summaries)
	}
	if _, _, suppressed := rec.counts(); suppressed != n-4 {
		t.Errorf("suppressed = %d; want %d", suppressed, n-4)
	}
}

// Messages from a thing nobody registered cost one registry read per
// UnknownTTL, not one each; once registered (after the negative entry
// expires) the thing is accepted.
func TestUnknownThingIsCached(t *testing.T) {
	e, faults := withFaults(newEnv(t))
	tenant, stranger := uniq("t"), uniq("stranger")
	rec := newFailRecorder()
	e.startIngest(t, rec, func(c *ingest.Config) {
		c.Rejections = ingest.RejectionConfig{UnknownTTL: time.Hour}
	})
	pub := e.publisher(t)
	const n = 15
	for i := range n { // one at a time: each could read the registry
		publish(t, pub, topic(tenant, stranger, "events"), event(stranger, uint64(i+1), fmt.Sprintf("m%d", i), "bowl.meal_finished", meal(1)))
		testkit.WaitFor(t, "the rejection's ack", hangGuard, func() bool { return rec.ackCount() == i+1 })
	}
	if got := faults.count("GetItem", lstest.Names(t).AppTable()); got != 1 {
		t.Errorf("registry reads for %d messages from one unknown thing = %d; want 1 (cached)", n, got)
	}
	if rec.rejected[ingest.ReasonUnknownThing] != n {
		t.Errorf("unknown_thing rejections = %d; want %d", rec.rejected[ingest.ReasonUnknownThing], n)
	}
}

// An ingest dead letter is replayed once its cause is fixed: a message
// from a thing registered only later is emitted by Replay, and a second
// replay emits nothing (the engine's idempotency key on (thing, event id)).
func TestReplayIngestDeadLetter(t *testing.T) {
	e := newEnv(t)
	tenant, thing := uniq("t"), uniq("late")
	rec := newFailRecorder()
	in := e.startIngest(t, rec, func(c *ingest.Config) { c.Rejections = ingest.RejectionConfig{UnknownTTL: time.Hour} })
	publish(t, e.publisher(t), topic(tenant, thing, "events"), event(thing, 1, "meal-1", "bowl.meal_finished", meal(42.5)))
	testkit.WaitFor(t, "the rejection's ack", hangGuard, func() bool { return rec.ackCount() == 1 })
	ctx := context.Background()
	pills, err := e.letters.Poison(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var letter *deadletter.Letter
	for i, l := range pills {
		if top, err := ingest.LetterTopic(l); err == nil && top == topic(tenant, thing, "events") {
			letter = &pills[i]
		}
	}
	if letter == nil {
		t.Fatalf("no ingest poison pill for %s among %d", thing, len(pills))
	}
	if _, err := in.Replay(ctx, *letter); ingest.ReasonOf(err) != ingest.ReasonUnknownThing {
		t.Fatalf("Replay before the thing is registered = %v; want an unknown_thing rejection", err)
	}
	e.register(t, thing, tenant)
	for i, want := range []ingest.Replayed{ingest.ReplayEmitted, ingest.ReplayDuplicate} {
		got, err := in.Replay(ctx, *letter)
		if err != nil || got != want {
			t.Fatalf("Replay #%d = %q, %v; want %q", i+1, got, err, want)
		}
	}
	// A telemetry letter from before ingest took events only is not
	// replayable: telemetry is the topic rules' now.
	old := *letter
	old.MessageID, old.Raw, old.RawSize = topic(tenant, thing, "telemetry"), []byte(`{"v":1,"thing":"`+thing+`","seq":1,"samples":[]}`), 0
	if _, err := in.Replay(ctx, old); !errors.Is(err, ingest.ErrNotReplayable) {
		t.Errorf("Replay(a telemetry letter) = %v; want ErrNotReplayable", err)
	}
	if err := e.letters.MarkReplayed(ctx, *letter); err != nil {
		t.Fatal(err)
	}
	evs := e.events(t, tenant)
	if len(evs) != 1 || evs[0].Type != "bowl.meal_finished" {
		t.Fatalf("events of %s = %+v; want the one replayed meal", tenant, evs)
	}
	pills, err = e.letters.Poison(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range pills {
		if l.Key() == letter.Key() && l.Open() {
			t.Errorf("letter %s still open after MarkReplayed", l.Key())
		}
	}
}

// A bowl that publishes before it is registered has every event
// quarantined (a dead letter with its bytes, replayable), not the first
// PerDevice a window: unknown_thing rejections have their own budget.
// And the ordinary budget is the gateway's, not a name it picks: made-up
// <gw>:* names share one.
func TestUnregisteredBowlIsQuarantinedWhole(t *testing.T) {
	e := newEnv(t)
	tenant, gw := uniq("t"), uniq("gw")
	late := gw + ":late"
	rec := newFailRecorder()
	in := e.startIngest(t, rec, func(c *ingest.Config) {
		c.Rejections = ingest.RejectionConfig{PerDevice: 3, Window: time.Hour, UnknownTTL: time.Hour}
	})
	pub := e.publisher(t)
	const n = 30
	for i := range n {
		publish(t, pub, topic(tenant, late, "events"), event(late, uint64(i+1), fmt.Sprintf("meal-%d", i), "bowl.meal_finished", meal(10)))
	}
	testkit.WaitFor(t, "every rejection acknowledged", hangGuard, func() bool { return rec.ackCount() == n })
	ctx := context.Background()
	pills, err := e.letters.Poison(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []deadletter.Letter
	for _, l := range pills {
		if top, err := ingest.LetterTopic(l); err == nil && top == topic(tenant, late, "events") {
			mine = append(mine, l)
		}
	}
	if len(mine) != n {
		t.Fatalf("quarantined letters of the unregistered bowl = %d; want all %d (before: PerDevice 3 and a summary)", len(mine), n)
	}
	e.register(t, late, tenant)
	for _, l := range mine {
		if got, err := in.Replay(ctx, l); err != nil || got != ingest.ReplayEmitted {
			t.Fatalf("Replay of %s = %q, %v; want emitted", l.Key(), got, err)
		}
	}
	if evs := e.events(t, tenant); len(evs) != n {
		t.Errorf("events of %s after replay = %d; want %d", tenant, len(evs), n)
	}

	// The ordinary budget: 3 invalid events under 3 made-up names of one
	// registered gateway's namespace write 3 letters, then a summary.
	names := []string{gw + ":a", gw + ":b", gw + ":c", gw + ":d", gw + ":e"}
	for _, th := range names {
		e.register(t, th, tenant)
	}
	before := rec.ackCount()
	for _, th := range names {
		publish(t, pub, topic(tenant, th, "events"), event(th, 0, "bad", "bowl.meal_finished", meal(1))) // seq 0: invalid
	}
	testkit.WaitFor(t, "the invalid events acknowledged", hangGuard, func() bool { return rec.ackCount() == before+len(names) })
	if _, _, suppressed := rec.counts(); suppressed != len(names)-4 {
		t.Errorf("suppressed = %d; want %d (one budget for the gateway's %d names: 3 letters, 1 summary)", suppressed, len(names)-4, len(names))
	}
}
