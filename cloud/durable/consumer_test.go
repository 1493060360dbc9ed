package durable

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// A first batch is acknowledged at once (no ack yet), later ones only when
// AckEvery has passed since the last ack; an ack repeats every range.
func TestAckCadence(t *testing.T) {
	r := newRig(t, nil)
	at := t0
	r.handle(t, r.c, r.record(t, tenant, "gw-1", at, encode(t, "ob1", at, weights("gw-1:a", 1, 60, at))))
	if n := len(r.pub.acks(t)); n != 1 {
		t.Fatalf("acks after the first batch = %d; want 1", n)
	}
	a := r.pub.acks(t)[0]
	if a.Outbox != "ob1" || !slices.Equal(a.Things["gw-1:a"], []wire.Range{{First: 1, Last: 60}}) {
		t.Errorf("first ack = %+v; want outbox ob1, gw-1:a [1,60]", a)
	}
	if r.pub.msgs[0].topic != wire.AckTopic(tenant, "gw-1") || r.pub.msgs[0].qos != 0 {
		t.Errorf("ack published on %q qos %d; want %q qos 0", r.pub.msgs[0].topic, r.pub.msgs[0].qos, wire.AckTopic(tenant, "gw-1"))
	}
	every := int(DefaultAckEvery / time.Minute)
	for m := 1; m < every; m++ {
		at = t0.Add(time.Duration(m) * time.Minute)
		r.clock.Set(at)
		q := uint64(60*m + 1)
		r.handle(t, r.c, r.record(t, tenant, "gw-1", at, encode(t, "ob1", at, weights("gw-1:a", q, q+59, at))))
	}
	if n := len(r.pub.acks(t)); n != 1 {
		t.Fatalf("acks within AckEvery = %d; want still 1", n)
	}
	at = t0.Add(DefaultAckEvery)
	r.clock.Set(at)
	q := uint64(60*every + 1)
	r.handle(t, r.c, r.record(t, tenant, "gw-1", at, encode(t, "ob1", at, weights("gw-1:a", q, q+59, at))))
	acks := r.pub.acks(t)
	if len(acks) != 2 {
		t.Fatalf("acks after AckEvery = %d; want 2", len(acks))
	}
	if got, want := acks[1].Things["gw-1:a"], []wire.Range{{First: 1, Last: q + 59}}; !slices.Equal(got, want) {
		t.Errorf("second ack gw-1:a = %v; want %v", got, want)
	}
	// Nothing new: nothing to acknowledge however long it waits.
	r.clock.Set(t0.Add(time.Hour))
	r.c.Flush(context.Background())
	if n := len(r.pub.acks(t)); n != 2 {
		t.Errorf("acks with no new seqs = %d; want 2", n)
	}
	// 12 records, 2 acks: the state row was written for the acks only.
	if n := r.db.statePuts(); n != 2 {
		t.Errorf("state puts = %d; want 2 (one per ack)", n)
	}
}

// A record read twice (Kinesis is at-least-once, the gateway resends) is
// counted once in the rollup.
func TestDuplicatesDroppedFromRollups(t *testing.T) {
	r := newRig(t, func(c *Config) { c.RollupEvery = 0 })
	p := encode(t, "ob1", t0, weights("gw-1:a", 1, 30, t0))
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, p))
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0.Add(time.Second), p))
	// A resend that overlaps: 21..40, of which 31..40 are new.
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0.Add(2*time.Second), encode(t, "ob1", t0, weights("gw-1:a", 21, 40, t0.Add(20*time.Second)))))
	if r.obs.samples != 40 || r.obs.dups != 40 {
		t.Errorf("samples, duplicates = %d, %d; want 40, 40", r.obs.samples, r.obs.dups)
	}
	pts, err := ReadRollups(context.Background(), r.db, "telemetry_state", "gw-1:a", t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, p := range pts {
		n += p.Count
	}
	if n != 40 {
		t.Errorf("rolled-up samples = %d; want 40 (points %+v)", n, pts)
	}
	// The first minute holds seqs 1..40 at t0+0..39 s: weights 101..140 g.
	if len(pts) != 1 || pts[0].Min != 101 || pts[0].Max != 140 || pts[0].Last != 140 || pts[0].Mean != 120.5 {
		t.Errorf("points = %+v; want one minute of min 101, max 140, mean 120.5, last 140", pts)
	}
}

// A gateway naming a bowl of another gateway, or another tenant's, or an
// unregistered one, gets nothing rolled up or acknowledged: the record is
// a dead letter kept for replay, whole.
func TestIdentityRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tenant string
		series []batch.Series
		reason Reason
	}{
		{"another gateway's bowl", tenant, []batch.Series{weights("gw-1:a", 1, 5, t0), weights("gw-2:a", 1, 5, t0)}, ReasonForeignThing},
		{"a name that only starts like the gateway's", tenant, []batch.Series{weights("gw-10", 1, 5, t0)}, ReasonForeignThing},
		{"another tenant's bowl under a forged tenant", "other-co", []batch.Series{weights("gw-1:a", 1, 5, t0)}, ReasonOtherTenant},
		{"an unregistered bowl", tenant, []batch.Series{weights("gw-1:a", 1, 5, t0), weights("gw-1:zzz", 1, 5, t0)}, ReasonUnknownThing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *Config) { c.RollupEvery = 0 })
			rec := r.record(t, tc.tenant, "gw-1", t0, encode(t, "ob1", t0, tc.series...))
			if res := r.handle(t, r.c, rec); len(res.BatchItemFailures) != 0 {
				t.Fatalf("Handle failures = %v; want none (a rejection is not retried)", res.BatchItemFailures)
			}
			if n := len(r.pub.acks(t)); n != 0 {
				t.Errorf("acks = %d; want 0", n)
			}
			if n := r.db.rollupPuts() + r.db.statePuts(); n != 0 {
				t.Errorf("rows written = %d; want 0", n)
			}
			if r.obs.samples != 0 || r.obs.rejected[tc.reason] != 1 {
				t.Errorf("samples %d, rejected %v; want 0 and one %s", r.obs.samples, r.obs.rejected, tc.reason)
			}
			ls := r.letters.all()
			if len(ls) != 1 {
				t.Fatalf("letters = %d; want 1", len(ls))
			}
			if l := ls[0]; l.Tenant != tc.tenant || !strings.HasPrefix(l.EventID, "gw-1/batch/") || l.Subscription != LetterSubscription || !strings.Contains(l.Error, string(tc.reason)) {
				t.Errorf("letter = tenant %q event %q subscription %q error %q; want tenant %q, event gw-1/batch/<sha256>, %q, reason %s", l.Tenant, l.EventID, l.Subscription, l.Error, tc.tenant, LetterSubscription, tc.reason)
			}
			if l := ls[0]; string(l.Raw) != string(encode(t, "ob1", t0, tc.series...)) {
				t.Errorf("letter raw is not the payload's bytes")
			}
		})
	}
}

// A registry outage is no rejection: the record is retried from, nothing
// dead-lettered, and the records before it are done.
func TestRegistryOutageRetries(t *testing.T) {
	r := newRig(t, nil)
	ok := r.record(t, tenant, "gw-2", t0, encode(t, "ob2", t0, weights("gw-2:a", 1, 5, t0)))
	bad := r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:b", 1, 5, t0)))
	after := r.record(t, tenant, "gw-2", t0, encode(t, "ob2", t0, weights("gw-2:a", 6, 9, t0)))
	// gw-2:a is cached by the consumer's registry in real life; here the
	// outage starts after the first record.
	r.handle(t, r.c, ok)
	r.devs.fail = errors.New("registry unreachable")
	res := r.handle(t, r.c, bad, after)
	if want := []BatchItemFailure{{ItemIdentifier: bad.SequenceNumber}}; !slices.Equal(res.BatchItemFailures, want) {
		t.Errorf("failures = %v; want %v", res.BatchItemFailures, want)
	}
	if n := len(r.letters.all()); n != 0 {
		t.Errorf("letters = %d; want 0", n)
	}
	r.devs.fail = nil
	if res := r.handle(t, r.c, bad, after); len(res.BatchItemFailures) != 0 {
		t.Errorf("retry failures = %v; want none", res.BatchItemFailures)
	}
	if r.obs.samples != 14 {
		t.Errorf("samples = %d; want 14", r.obs.samples)
	}
}

// v1 telemetry is tracked (duplicates, rollups) under the pseudo outbox
// and never acknowledged: a v1 gateway forgot it on PUBACK.
func TestV1RecordsTrackedNeverAcked(t *testing.T) {
	r := newRig(t, func(c *Config) { c.RollupEvery = 0 })
	p := v1(t, "gw-1:a", 1, 10, t0)
	r.handle(t, r.c, r.record(t, tenant, "gw-1:a", t0, p), r.record(t, tenant, "gw-1:a", t0, p))
	if r.obs.samples != 10 || r.obs.dups != 10 {
		t.Errorf("samples, duplicates = %d, %d; want 10, 10", r.obs.samples, r.obs.dups)
	}
	r.clock.Set(t0.Add(time.Hour))
	r.handle(t, r.c, r.record(t, tenant, "gw-1:a", t0.Add(time.Hour), v1(t, "gw-1:a", 11, 20, t0.Add(time.Hour))))
	if n := len(r.pub.msgs); n != 0 {
		t.Errorf("published = %d; want 0 for v1", n)
	}
	if r.db.rollupPuts() == 0 {
		t.Error("no rollup written for v1 telemetry")
	}
	// A v1 message of another thing than the topic's is refused.
	r.handle(t, r.c, r.record(t, tenant, "gw-1:a", t0, v1(t, "gw-1:b", 1, 1, t0)))
	if r.obs.rejected[ReasonForeignThing] != 1 {
		t.Errorf("rejected = %v; want one foreign_thing", r.obs.rejected)
	}
}

// Records that do not decode are dead letters, never retries: poison
// pills when even the envelope fails, tenant letters otherwise.
func TestUndecodableRecordsAreLetters(t *testing.T) {
	r := newRig(t, nil)
	good := r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:a", 1, 2, t0)))
	garbage := Record{Data: []byte("not json"), PartitionKey: "gw-1", SequenceNumber: "7", ShardID: "s"}
	badBatch := r.record(t, tenant, "gw-1", t0, []byte{batch.Format, 0xff, 0x00})
	badV1 := r.record(t, tenant, "gw-1", t0, []byte(`{"v":1,"thing":"gw-1","seq":0,"samples":[]}`))
	v1Outbox := r.record(t, tenant, "gw-1", t0, encode(t, V1Outbox, t0, weights("gw-1:a", 1, 2, t0)))
	if res := r.handle(t, r.c, garbage, badBatch, badV1, v1Outbox, good); len(res.BatchItemFailures) != 0 {
		t.Fatalf("failures = %v; want none", res.BatchItemFailures)
	}
	ls := r.letters.all()
	if len(ls) != 4 || !ls[0].Poison || string(ls[0].Raw) != "not json" || ls[1].Poison || ls[1].Tenant != tenant {
		t.Errorf("letters = %+v; want a poison pill of the record's bytes, then three tenant letters", ls)
	}
	if r.obs.rejected[ReasonMalformed] != 4 || r.obs.samples != 2 {
		t.Errorf("rejected %v, samples %d; want 4 malformed, 2 samples", r.obs.rejected, r.obs.samples)
	}
}

// One gateway cannot flood the dead letters: past PerGateway letters in a
// window it writes one summary letter, then is only counted; another
// gateway keeps its own budget.
func TestRejectionsRateLimitedPerGateway(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Rejections.PerGateway = 3 })
	for i := 0; i < 10; i++ {
		// The payload names other bowls each time: the limit is keyed
		// on the authenticated gateway, not on names from the body.
		r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-9:a"+strings.Repeat("x", i), 1, 1, t0))))
	}
	r.handle(t, r.c, r.record(t, tenant, "gw-2", t0, encode(t, "ob2", t0, weights("gw-9:a", 1, 1, t0))))
	ls := r.letters.all()
	if len(ls) != 5 {
		t.Fatalf("letters = %d; want 3 + 1 summary for gw-1, 1 for gw-2", len(ls))
	}
	if !strings.Contains(ls[3].EventID, "rate_limited") || !strings.HasPrefix(ls[4].EventID, "gw-2/") {
		t.Errorf("letters 4 and 5 = %q, %q; want gw-1's summary, then gw-2's letter", ls[3].EventID, ls[4].EventID)
	}
	if r.obs.rejected[ReasonForeignThing] != 11 {
		t.Errorf("rejections counted = %v; want 11", r.obs.rejected)
	}
}

// The process's caches are bounded: a gateway dropped from the state cache
// with something unwritten is written, and read again when it returns.
func TestCachesBounded(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxGateways = 1; c.MaxBowls = 1; c.RollupEvery = time.Hour })
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:a", 1, 5, t0), weights("gw-1:b", 1, 5, t0))))
	// gw-1:a was dropped from the rollup cache for gw-1:b and written at
	// once; gw-1:b waits for its window to close.
	if n := r.db.rollupPuts(); n != 1 {
		t.Errorf("rollup puts after an eviction = %d; want 1", n)
	}
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:a", 10, 12, t0)))) // opens a hole
	r.handle(t, r.c, r.record(t, tenant, "gw-2", t0, encode(t, "ob2", t0, weights("gw-2:a", 1, 5, t0))))
	gets := r.db.stateGets()
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:a", 6, 9, t0))))
	if r.db.stateGets() != gets+1 {
		t.Errorf("state gets = %d; want the dropped gateway's row read again (%d)", r.db.stateGets(), gets+1)
	}
	if r.c.gws.len() != 1 || r.c.bowls.len() != 1 {
		t.Errorf("cached gateways, bowls = %d, %d; want 1, 1", r.c.gws.len(), r.c.bowls.len())
	}
	if r.obs.dups != 0 || r.obs.samples != 22 {
		t.Errorf("samples, duplicates = %d, %d; want 22, 0", r.obs.samples, r.obs.dups)
	}
}

// ReadRollups returns the minutes in [from, to), sorted by time and kind.
func TestReadRollupsRange(t *testing.T) {
	r := newRig(t, func(c *Config) { c.RollupEvery = 0 })
	s := weights("gw-1:a", 1, 1, t0.Add(59*time.Minute))
	s.Samples = append(s.Samples, batch.Sample{Seq: 2, At: t0.Add(60 * time.Minute), Kind: "temp_c", Value: 215, Scale: 1},
		batch.Sample{Seq: 3, At: t0.Add(61 * time.Minute), Kind: KindWeight, Value: 0})
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0.Add(2*time.Hour), encode(t, "ob1", t0.Add(2*time.Hour), s)))
	pts, err := ReadRollups(context.Background(), r.db, "telemetry_state", "gw-1:a", t0.Add(59*time.Minute+30*time.Second), t0.Add(61*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{
		{At: t0.Add(59 * time.Minute), Kind: KindWeight, Count: 1, Min: 101, Max: 101, Mean: 101, Last: 101},
		{At: t0.Add(60 * time.Minute), Kind: "temp_c", Count: 1, Last: 21.5},
	}
	if !slices.Equal(pts, want) {
		t.Errorf("ReadRollups = %+v; want %+v", pts, want)
	}
}

// Every rollup row is put once and never rewritten or read by the
// consumer: one per bowl per RollupEvery window, plus a row of its own for
// minutes of a closed window that come late; ReadRollups folds them.
func TestRollupRowsWrittenOnce(t *testing.T) {
	r := newRig(t, nil)
	const n = 600 // ten hours of one batch a minute, two bowls
	for i := 0; i < n; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		r.clock.Set(at)
		q := uint64(60*i + 1)
		r.handle(t, r.c, r.record(t, tenant, "gw-1", at, encode(t, "ob1", at, weights("gw-1:a", q, q+59, at), weights("gw-1:b", q, q+59, at))))
	}
	// A late resend of minute 5 (seqs never seen), after its window was
	// written.
	late := t0.Add(5 * time.Minute)
	r.handle(t, r.c, r.record(t, tenant, "gw-1", r.clock.Now(), encode(t, "ob2", late, weights("gw-1:a", 1, 3, late))))
	r.clock.Set(t0.Add(n*time.Minute + DefaultRollupEvery + RollupSlack))
	r.c.Flush(context.Background())
	windows := n / int(DefaultRollupEvery/time.Minute)
	if got, want := r.db.rollupPuts(), 2*windows+1; got != want {
		t.Errorf("rollup puts = %d; want %d (one per bowl per window, one late)", got, want)
	}
	if r.db.rewrites != 0 {
		t.Errorf("rollup rows put again = %d; want 0", r.db.rewrites)
	}
	if g := r.db.getsBy[rollupPKPrefix]; g != 0 {
		t.Errorf("rollup reads by the consumer = %d; want 0", g)
	}
	for _, th := range []string{"gw-1:a", "gw-1:b"} {
		pts, err := ReadRollups(context.Background(), r.db, "telemetry_state", th, t0, t0.Add(n*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var count int64
		for _, p := range pts {
			count += p.Count
			if want := int64(60); p.At.Equal(late) && th == "gw-1:a" {
				want += 3
				if p.Count != want {
					t.Errorf("%s minute 5 count = %d; want %d (late row folded in)", th, p.Count, want)
				}
			}
		}
		want := int64(60 * n)
		if th == "gw-1:a" {
			want += 3
		}
		if len(pts) != n || count != want {
			t.Errorf("%s: %d points, %d samples; want %d points, %d samples", th, len(pts), count, n, want)
		}
	}
}

// A bowl's 30-minute window of weight_g at 50 Hz fits one 1 KB write unit
// with its keys, and its minutes decode to what was encoded (to the
// milligram).
func TestRollupRowSize(t *testing.T) {
	start := t0
	m := minutes{}
	for off := 0; off < 30; off++ {
		s := &stats{}
		for i := 0; i < 3000; i++ {
			at := start.Add(time.Duration(off)*time.Minute + time.Duration(i)*20*time.Millisecond)
			s.add(KindWeight, at, 1234.567+float64(i%7)*0.013)
		}
		m[off] = map[string]*stats{KindWeight: s}
	}
	m[3]["temp_c"] = &stats{N: 2, Last: 21.5, T: start.Add(3*time.Minute + time.Second).UnixMilli()}
	end := start.Add(30 * time.Minute)
	b := encodeMinutes(start, end, m)
	item := rollupKey("gw-0001:1", end, processID()+"-zz")
	size := len(b) + len("m") + len("ttl") + 10 + len("entity") + len(RollupEntity)
	for k, v := range item {
		size += len(k) + len(v.(*types.AttributeValueMemberS).Value)
	}
	// The completeness tally (completeness.go): the window's 90,000 seqs of
	// one outbox (a 128-bit id in hex) at seqs past a billion, with a hole,
	// and some duplicates; it must keep the row in one 1 KB write unit.
	var tl tally
	tl.Seqs = map[string]spanSet{"0123456789abcdef0123456789abcdef": {{1_000_000_001, 1_000_050_000}, {1_000_050_101, 1_000_090_100}}}
	tl.Dups = 12345
	size += len("c") + len(tl.encode())
	if size > 1024 {
		t.Errorf("row of 30 minutes = %d bytes (m %d, c %d); want <= 1024", size, len(b), len(tl.encode()))
	}
	t.Logf("row of 30 minutes of 50 Hz: %d bytes (m %d, c %d)", size, len(b), len(tl.encode()))
	got, err := decodeMinutes(end, b)
	if err != nil {
		t.Fatal(err)
	}
	for off, kinds := range m {
		for k, s := range kinds {
			g := got[start.Add(time.Duration(off)*time.Minute)][k]
			if g == nil || g.N != s.N || g.T != s.T || milli(g.Last) != milli(s.Last) || milli(g.Min) != milli(s.Min) || milli(g.Max) != milli(s.Max) || milli(g.Sum) != milli(s.Sum) {
				t.Fatalf("minute %d %s = %+v; want %+v", off, k, g, s)
			}
		}
	}
	if _, err := decodeMinutes(end, b[:len(b)-1]); err == nil {
		t.Error("decode of a truncated row = nil error; want one")
	}
}

// Handle is called for several shards at once: each gateway's state stays
// whole (run with -race).
func TestHandleConcurrentShards(t *testing.T) {
	r := newRig(t, func(c *Config) { c.RollupEvery = 0; c.MaxGateways = 1 })
	recs := map[string][]Record{}
	for _, gw := range []string{"gw-1", "gw-2"} {
		for i := uint64(0); i < 20; i++ {
			recs[gw] = append(recs[gw], r.record(t, tenant, gw, t0, encode(t, "ob-"+gw, t0, weights(gw+":a", 1+10*i, 10+10*i, t0))))
		}
	}
	var wg sync.WaitGroup
	for _, gw := range []string{"gw-1", "gw-2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, rec := range recs[gw] {
				if _, err := r.c.Handle(context.Background(), []Record{rec}); err != nil {
					t.Errorf("Handle: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	r.c.Flush(context.Background())
	if r.obs.samples != 400 {
		t.Errorf("samples = %d; want 400", r.obs.samples)
	}
	for _, gw := range []string{"gw-1", "gw-2"} {
		pts, err := ReadRollups(context.Background(), r.db, "telemetry_state", gw+":a", t0, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, p := range pts {
			n += p.Count
		}
		if n != 200 {
			t.Errorf("%s rolled up %d samples; want 200", gw, n)
		}
	}
}

// A failed publish records no ack time: the next call publishes the
// same ack again, what the row written before it holds (an ack never
// names what the row lacks), without writing the row again; the seqs
// taken in meanwhile wait for the next ack.
func TestAckPublishFailureRetried(t *testing.T) {
	r := newRig(t, nil)
	r.pub.fail = context.DeadlineExceeded
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:a", 1, 5, t0))))
	if n := r.db.statePuts(); n != 1 {
		t.Errorf("state puts after a failed ack = %d; want 1 (the row before the ack)", n)
	}
	r.pub.fail = nil
	r.clock.Set(t0.Add(time.Second))
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0.Add(time.Second), encode(t, "ob1", t0.Add(time.Second), weights("gw-1:a", 6, 8, t0))))
	acks := r.pub.acks(t)
	if len(acks) != 1 || !slices.Equal(acks[0].Things["gw-1:a"], []wire.Range{{First: 1, Last: 5}}) {
		t.Errorf("acks = %+v; want one of [1,5]", acks)
	}
	if n := r.db.statePuts(); n != 1 {
		t.Errorf("state puts = %d; want 1", n)
	}
	r.clock.Set(t0.Add(time.Second + DefaultAckEvery))
	r.c.FlushDue(context.Background())
	if acks := r.pub.acks(t); len(acks) != 2 || !slices.Equal(acks[1].Things["gw-1:a"], []wire.Range{{First: 1, Last: 8}}) {
		t.Errorf("acks = %+v; want a second of [1,8]", acks)
	}
}

// A rollup put that timed out after it landed is put again with the same
// minutes; samples that arrived meanwhile are written after, once.
func TestRollupPutTimedOutAfterLandingCountsOnce(t *testing.T) {
	r := newRig(t, func(c *Config) { c.RollupEvery = 0 })
	r.db.landThenFail = rollupPKPrefix
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:a", 1, 10, t0))))
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:a", 11, 20, t0.Add(10*time.Second)))))
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:a", 21, 25, t0.Add(20*time.Second)))))
	pts, err := ReadRollups(context.Background(), r.db, "telemetry_state", "gw-1:a", t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 1 || pts[0].Count != 25 {
		t.Errorf("points = %+v; want one minute of 25 samples", pts)
	}
}

// FlushDue, the timer's flush, writes only the rollup windows that have
// closed; Flush, the shutdown's, writes the open one too.
func TestFlushDueWritesOnlyClosedWindows(t *testing.T) {
	r := newRig(t, nil)
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:a", 1, 60, t0))))
	r.clock.Set(t0.Add(DefaultRollupEvery))
	r.c.FlushDue(context.Background())
	if n := r.db.rollupPuts(); n != 0 {
		t.Errorf("rollup puts with the window open = %d; want 0", n)
	}
	r.clock.Set(t0.Add(DefaultRollupEvery + RollupSlack))
	r.c.FlushDue(context.Background())
	if n := r.db.rollupPuts(); n != 1 {
		t.Errorf("rollup puts once the window closed = %d; want 1", n)
	}
	late := t0.Add(DefaultRollupEvery + RollupSlack)
	r.handle(t, r.c, r.record(t, tenant, "gw-1", late, encode(t, "ob1", late, weights("gw-1:a", 61, 70, late))))
	r.c.FlushDue(context.Background())
	if n := r.db.rollupPuts(); n != 1 {
		t.Errorf("rollup puts after FlushDue of an open window = %d; want still 1", n)
	}
	r.c.Flush(context.Background())
	if n := r.db.rollupPuts(); n != 2 {
		t.Errorf("rollup puts after Flush = %d; want 2", n)
	}
}

// itemCounter counts the items a Query returned.
type itemCounter struct {
	RollupReader
	items int
}

func (q *itemCounter) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := q.RollupReader.Query(ctx, in, opts...)
	if out != nil {
		q.items += len(out.Items)
	}
	return out, err
}

// A reader of the last minutes reads only the rows of the last minutes,
// however many were written before: rows are keyed by their window's
// end. Under bowline dev (RollupEvery 0) every call writes a row of a
// one-minute window.
func TestReadRollupsReadsOnlyTheRowsOfItsRange(t *testing.T) {
	for _, every := range []time.Duration{0, DefaultRollupEvery} {
		r := newRig(t, func(c *Config) { c.RollupEvery = every })
		const n = 180
		for i := range n {
			at := t0.Add(time.Duration(i) * time.Minute)
			r.clock.Set(at)
			q := uint64(60*i + 1)
			r.handle(t, r.c, r.record(t, tenant, "gw-1", at, encode(t, "ob1", at, weights("gw-1:a", q, q+59, at))))
		}
		r.c.Flush(context.Background())
		q := &itemCounter{RollupReader: r.db}
		from := t0.Add((n - 1) * time.Minute)
		pts, err := ReadRollups(context.Background(), q, "telemetry_state", "gw-1:a", from, from.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(pts) != 1 || pts[0].Count != 60 || !pts[0].At.Equal(from) {
			t.Errorf("RollupEvery %v: points = %+v; want the last minute's, 60 samples", every, pts)
		}
		if q.items > 2 {
			t.Errorf("RollupEvery %v: rows read for the last minute = %d of %d; want at most 2", every, q.items, r.db.rollupPuts())
		}
	}
}
