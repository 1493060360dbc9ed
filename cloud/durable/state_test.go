package durable

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/edge/wire"
)

// seenOnly fails the test when an ack names a seq that no record carried.
func seenOnly(t *testing.T, p *fakePublisher, outbox, thing string, seen spanSet) {
	t.Helper()
	for _, sp := range ackedRanges(t, p, outbox)[thing] {
		for q := sp.From; q <= sp.To; q++ {
			if !seen.contains(q) {
				t.Fatalf("ack names %s seq %d, which no record carried (seen %v)", thing, q, seen)
			}
		}
	}
}

// ackEvery10 pins the ack cadence the timelines below are written for.
func ackEvery10(c *Config) { c.AckEvery = 10 * time.Minute }

// The consumer's state is not the durability promise: a process that lost
// it (cold start, empty row) or reads a stale row acknowledges less,
// never a seq it has not seen in the stream.
func TestLostOrStaleStateNeverAcksUnseen(t *testing.T) {
	r := newRig(t, ackEvery10)
	ctx := context.Background()
	// Process A sees 1..100 and acknowledges them (its row now says so).
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:a", 1, 100, t0))))
	stale := r.db.items[[2]string{StatePK(tenant, "gw-1"), StateSK}]

	// Lost state: process B on an empty table sees only 150..160.
	r.pub.msgs = nil
	lost := r.consumer(t, newFakeDB(), ackEvery10)
	r.handle(t, lost, r.record(t, tenant, "gw-1", t0.Add(time.Minute), encode(t, "ob1", t0.Add(time.Minute), weights("gw-1:a", 150, 160, t0))))
	got := ackedRanges(t, r.pub, "ob1")["gw-1:a"]
	if want := (spanSet{{150, 160}}); !slices.Equal(got, want) {
		t.Errorf("after a lost state acked %v; want %v", got, want)
	}

	// Stale state: A goes on to 101..200 (acked 10 min later), but
	// process C reads the row as it was after 1..100 and then sees only
	// 250..260.
	r.clock.Set(t0.Add(10 * time.Minute))
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0.Add(10*time.Minute), encode(t, "ob1", t0.Add(10*time.Minute), weights("gw-1:a", 101, 200, t0))))
	staleDB := newFakeDB()
	staleDB.items[[2]string{StatePK(tenant, "gw-1"), StateSK}] = stale
	r.pub.msgs = nil
	c := r.consumer(t, staleDB, ackEvery10)
	r.handle(t, c, r.record(t, tenant, "gw-1", t0.Add(11*time.Minute), encode(t, "ob1", t0.Add(11*time.Minute), weights("gw-1:a", 250, 260, t0))))
	got = ackedRanges(t, r.pub, "ob1")["gw-1:a"]
	if want := (spanSet{{1, 100}, {250, 260}}); !slices.Equal(got, want) {
		t.Errorf("after a stale state acked %v; want %v", got, want)
	}
	seenOnly(t, r.pub, "ob1", "gw-1:a", spanSet{{1, 200}, {250, 260}})

	// A process whose cached row is stale and that shares A's table: its
	// put conflicts, it reads A's row, merges and writes the union.
	shared := r.db
	c2 := r.consumer(t, shared, ackEvery10)
	// c2 caches an old view of the row: load it, then A writes again.
	if _, err := c2.gateway(ctx, tenant, "gw-1"); err != nil {
		t.Fatal(err)
	}
	r.clock.Set(t0.Add(20 * time.Minute))
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0.Add(20*time.Minute), encode(t, "ob1", t0.Add(20*time.Minute), weights("gw-1:a", 201, 210, t0))))
	r.clock.Set(t0.Add(31 * time.Minute))
	r.pub.msgs = nil
	r.handle(t, c2, r.record(t, tenant, "gw-1", t0.Add(31*time.Minute), encode(t, "ob1", t0.Add(31*time.Minute), weights("gw-1:a", 300, 310, t0))))
	st, err := decodeState(tenant, "gw-1", []byte(str(shared.items[[2]string{StatePK(tenant, "gw-1"), StateSK}], "state")))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.outboxes["ob1"].things["gw-1:a"].spans, (spanSet{{1, 210}, {300, 310}}); !slices.Equal(got, want) {
		t.Errorf("merged row spans = %v; want %v", got, want)
	}
	seenOnly(t, r.pub, "ob1", "gw-1:a", spanSet{{1, 210}, {250, 260}, {300, 310}})
}

// Holes are never acknowledged, not even once raised as a gap, and
// bounding the spans forgets old ones instead of filling holes.
func TestHolesAndBoundsNeverAcked(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxSpans = 3; c.AckEvery = time.Minute; c.GapGrace = time.Minute })
	seen := spanSet{}
	for i := uint64(0); i < 8; i++ {
		at := t0.Add(time.Duration(i) * 2 * time.Minute)
		r.clock.Set(at)
		q := 1 + 10*i
		seen = seen.add(q, q+4)
		r.handle(t, r.c, r.record(t, tenant, "gw-1", at, encode(t, "ob1", at, weights("gw-1:a", q, q+4, at))))
	}
	seenOnly(t, r.pub, "ob1", "gw-1:a", seen)
	last := r.pub.acks(t)[len(r.pub.acks(t))-1].Things["gw-1:a"]
	if len(last) != 3 {
		t.Errorf("last ack ranges = %v; want the 3 newest spans", last)
	}
	if len(r.emit.gaps()) == 0 {
		t.Error("no gap raised for holes past their grace")
	}
}

// A hole open longer than GapGrace on the gateway's clock raises
// bowl.data_gap once, stamped with the gateway's clock; the wall clock
// does not count, and a failed emit is tried again with the same key.
// (Its batches come far apart: GapStep lets each step count in full.)
func TestGapRaisedOnceOnGatewayClock(t *testing.T) {
	r := newRig(t, func(c *Config) { c.GapStep = DefaultGapGrace })
	gw := t0.Add(-48 * time.Hour) // the gateway's clock: two days behind, plausible
	send := func(from, to uint64, sent time.Time) {
		t.Helper()
		r.handle(t, r.c, r.record(t, tenant, "gw-1", r.clock.Now(), encode(t, "ob1", sent, weights("gw-1:a", from, to, sent))))
	}
	send(1, 10, gw)
	send(20, 30, gw.Add(time.Minute)) // hole 11..19 noticed at gw+1m
	r.clock.Set(t0.Add(24 * time.Hour))
	g := DefaultGapGrace
	send(31, 40, gw.Add(g-10*time.Minute))
	if n := len(r.emit.gaps()); n != 0 {
		t.Fatalf("gaps raised within grace on the gateway's clock = %d; want 0 (the wall clock moved a day)", n)
	}
	r.emit.fail = context.DeadlineExceeded
	send(41, 50, gw.Add(g+2*time.Minute))
	if n := len(r.emit.gaps()); n != 0 {
		t.Fatalf("gaps = %d while the engine fails; want 0", n)
	}
	r.emit.fail = nil
	send(51, 60, gw.Add(g+3*time.Minute))
	send(61, 70, gw.Add(g+4*time.Minute))
	gaps := r.emit.gaps()
	want := catalog.DataGap{Thing: "gw-1:a", Lane: wire.KindTelemetry, Outbox: "ob1", FromSeq: 11, ToSeq: 19, MissingSince: gw.Add(time.Minute)}
	if len(gaps) != 1 || gaps[0] != want {
		t.Fatalf("gaps = %+v; want once %+v", gaps, want)
	}
	if got := r.emit.events[0].IdempotencyKey; got != "gw-1:a/gap/telemetry@ob1/11-19" {
		t.Errorf("idempotency key = %q", got)
	}
	// The resend fills the hole: it closes (the row is written), and
	// the acked ranges become one.
	r.clock.Set(t0.Add(25 * time.Hour))
	puts := r.db.statePuts()
	send(11, 19, gw.Add(g+10*time.Minute))
	if r.db.statePuts() == puts {
		t.Error("closing a hole did not write the state row")
	}
	if got := ackedRanges(t, r.pub, "ob1")["gw-1:a"]; !slices.Equal(got, spanSet{{1, 70}}) {
		t.Errorf("acked = %v; want [1,70]", got)
	}
}

// An ack past 128 KB is split into messages that each fit and together
// name every range.
func TestAckSplit(t *testing.T) {
	o := &outboxState{things: map[string]*thingState{}}
	want := map[string]spanSet{}
	for i := 0; i < 256; i++ {
		name := "gw-1:bowl-" + strings.Repeat("x", 60) + "-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		t := &thingState{}
		for q := uint64(0); q < 64; q++ {
			t.spans = t.spans.add(1_000_000_000+q*10, 1_000_000_000+q*10+5)
		}
		o.things[name], want[name] = t, t.spans
	}
	msgs, err := ackMessages("ob1", o, t0, wire.MaxPayload)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) < 2 {
		t.Fatalf("messages = %d; want several", len(msgs))
	}
	got := map[string]spanSet{}
	for i, m := range msgs {
		if len(m) > wire.MaxPayload {
			t.Errorf("message %d is %d bytes; want <= %d", i, len(m), wire.MaxPayload)
		}
		a, err := wire.DecodeAck(m)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		for th, rs := range a.Things {
			for _, r := range rs {
				got[th] = got[th].add(r.First, r.Last)
			}
		}
	}
	for th, w := range want {
		if !slices.Equal(got[th], w) {
			t.Fatalf("thing %s acked %v; want %v", th, got[th], w)
		}
	}
	// One thing's ranges alone over the limit are split too.
	one := &outboxState{things: map[string]*thingState{"gw-1:a": {spans: want[func() string {
		for k := range want {
			return k
		}
		return ""
	}()]}}}
	msgs, err = ackMessages("ob1", one, t0, 600)
	if err != nil || len(msgs) < 2 {
		t.Fatalf("split of one thing: %d messages, %v; want several", len(msgs), err)
	}
	for _, m := range msgs {
		if len(m) > 600 {
			t.Errorf("message of %d bytes; want <= 600", len(m))
		}
	}
}

// A gateway clock far ahead is corrected for the rollups from sent_at vs
// received_at, and counted.
func TestClockAheadCorrected(t *testing.T) {
	r := newRig(t, func(c *Config) { c.RollupEvery = 0 })
	ahead := t0.Add(3 * time.Hour)
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", ahead, weights("gw-1:a", 1, 3, ahead))))
	if r.obs.clockFix != 1 {
		t.Errorf("clock fixes = %d; want 1", r.obs.clockFix)
	}
	pts, err := ReadRollups(context.Background(), r.db, "telemetry_state", "gw-1:a", t0.Add(-time.Hour), t0.Add(5*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 1 || !pts[0].At.Equal(t0) {
		t.Errorf("points = %+v; want one at %s (corrected)", pts, t0)
	}
	// Unset clock (1970): corrected too.
	unset := time.Unix(1000, 0).UTC()
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0.Add(time.Hour), encode(t, "ob1", unset, weights("gw-1:a", 4, 4, unset))))
	if r.obs.clockFix != 2 {
		t.Errorf("clock fixes = %d; want 2", r.obs.clockFix)
	}
}

// N records make far fewer writes: the state row only for acks and holes,
// a bowl's rollup once per RollupEvery.
func TestWritesOnlyWhenSomethingMatters(t *testing.T) {
	r := newRig(t, nil)
	const n = 600 // ten hours of one batch a minute from one gateway with two bowls
	for i := 0; i < n; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		r.clock.Set(at)
		q := uint64(60*i + 1)
		r.handle(t, r.c, r.record(t, tenant, "gw-1", at, encode(t, "ob1", at, weights("gw-1:a", q, q+59, at), weights("gw-1:b", q, q+59, at))))
	}
	state, rollups := r.db.statePuts(), r.db.rollupPuts()
	t.Logf("%d records: %d state puts, %d rollup puts, %d gets", n, state, rollups, r.db.gets)
	perAck := int(DefaultAckEvery / time.Minute)
	if state > n/perAck+1 {
		t.Errorf("state puts = %d; want at most %d (one per AckEvery)", state, n/perAck+1)
	}
	// Two bowls, one write per RollupEvery each, plus an hour boundary
	// now and then.
	perRollup := int(DefaultRollupEvery / time.Minute)
	if rollups > 2*(n/perRollup+n/60+2) {
		t.Errorf("rollup puts = %d; want at most %d", rollups, 2*(n/perRollup+n/60+2))
	}
	if r.db.gets > 1 {
		t.Errorf("gets = %d; want 1 (the state row, on first use)", r.db.gets)
	}
}

// Config refuses what it cannot work with and fills defaults.
func TestConfigValidate(t *testing.T) {
	var c Config
	if err := c.Validate(); err == nil {
		t.Error("Validate of an empty Config = nil; want ErrConfig")
	}
	d := DefaultConfig()
	if d.AckEvery != 30*time.Minute || d.GapGrace != 96*time.Minute || d.GapStep != 4*time.Minute || d.RollupEvery != 30*time.Minute || d.RegistryTTL != 10*time.Minute {
		t.Errorf("DefaultConfig = %+v", d)
	}
	if DefaultAckEvery+wire.DefaultBatchInterval >= wire.DefaultAckTimeout {
		t.Errorf("DefaultAckEvery %v + a batch interval %v >= the gateways' ack timeout %v: they would resend what is about to be acknowledged", DefaultAckEvery, wire.DefaultBatchInterval, wire.DefaultAckTimeout)
	}
}

// The state row's JSON keeps what the consumer needs after a restart.
func TestStateRoundTrip(t *testing.T) {
	s := newGWState(tenant, "gw-1")
	s.lastAck = t0
	o := s.outbox("ob1")
	o.seen, o.clock = t0, t0.Add(-time.Hour)
	th := o.thing("gw-1:a")
	th.spans = spanSet{{1, 5}, {9, 12}}
	th.noticed[6], th.opened[6] = t0, t0.Add(-time.Hour)
	th.raised = spanSet{{6, 8}}
	b, err := s.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeState(tenant, "gw-1", b)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := got.encode()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(b2) {
		t.Errorf("round trip:\n got %s\nwant %s", b2, b)
	}
}

// A row written before the outbox clock (2026-12-05) reads with its
// holes' ages as they were: the clock starts at seen, each hole's
// opening at its noticed time. The rows written since add "clock" and
// "opened", which the earlier code ignores.
func TestStateRowBeforeClock(t *testing.T) {
	old := `{"last_ack":"2026-03-02T10:30:00Z","outboxes":{"ob1":{"seen":"2026-03-02T10:40:00Z","things":{"gw-1:a":{"spans":[[1,10],[20,30]],"noticed":{"11":"2026-03-02T10:01:00Z"}}}}}}`
	s, err := decodeState(tenant, "gw-1", []byte(old))
	if err != nil {
		t.Fatal(err)
	}
	o := s.outboxes["ob1"]
	if th := o.things["gw-1:a"]; !o.clock.Equal(o.seen) || !th.opened[11].Equal(th.noticed[11]) {
		t.Errorf("clock %v, opened %v; want seen %v, noticed %v", o.clock, th.opened, o.seen, th.noticed)
	}
	b, err := s.encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"last_ack":"2026-03-02T10:30:00Z","outboxes":{"ob1":{"seen":"2026-03-02T10:40:00Z","clock":"2026-03-02T10:40:00Z","things":{"gw-1:a":{"spans":[[1,10],[20,30]],"noticed":{"11":"2026-03-02T10:01:00Z"},"opened":{"11":"2026-03-02T10:01:00Z"}}}}}}`
	if string(b) != want {
		t.Errorf("encoded:\n got %s\nwant %s", b, want)
	}
}
