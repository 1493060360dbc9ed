package forward

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire/batch"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
)

// countingSource counts the telemetry reads of each batch round: a round
// that is due starts by listing the things with telemetry.
type countingSource struct {
	*outbox.Outbox
	mu     sync.Mutex
	rounds []int // telemetry reads per round
}

func (c *countingSource) Things(lane outbox.Lane) ([]string, error) {
	if lane == outbox.Telemetry {
		c.mu.Lock()
		c.rounds = append(c.rounds, 0)
		c.mu.Unlock()
	}
	return c.Outbox.Things(lane)
}

func (c *countingSource) Telemetry(ctx context.Context, thing string, from, to uint64, max int) ([]outbox.Record, error) {
	c.mu.Lock()
	if len(c.rounds) > 0 {
		c.rounds[len(c.rounds)-1]++
	}
	c.mu.Unlock()
	return c.Outbox.Telemetry(ctx, thing, from, to, max)
}

// since returns the reads per round of the rounds from round i on.
func (c *countingSource) since(i int) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.rounds[i:])
}

func (c *countingSource) roundsSoFar() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.rounds)
}

// TestBacklogDoesNotHoldBackOtherThings has a gateway come back from an
// outage with a backlog of ten batches on bowl-1, a resend due on bowl-2
// (sent, PUBACKed, never acknowledged, past AckTimeout) and new data on
// bowl-2 and bowl-3. The first batch after the outage carries bowl-2's
// resend and every bowl's new data beside a share of bowl-1's backlog:
// a later thing never waits behind an earlier thing's backlog (the
// cloud would see bowl-2's hole age for the whole drain;
// docs/telemetry-path.md, "Gaps"). Every batch stays within
// BatchMaxSamples and every seq arrives, in seq order per thing.
func TestBacklogDoesNotHoldBackOtherThings(t *testing.T) {
	ctx := t.Context()
	src := &countingSource{Outbox: openOutbox(t)}
	o := src.Outbox
	if err := o.Append(ctx, telemetry("bowl-2", 20, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, nil)
	const (
		ackTimeout = time.Second
		maxSamples = 100
		backlog    = 10 * maxSamples
	)
	f, _ := runForwarder(t, Config{Broker: b.URL, BatchInterval: 100 * time.Millisecond, AckTimeout: ackTimeout, BatchMaxSamples: maxSamples,
		BackoffMin: 20 * time.Millisecond, BackoffMax: 50 * time.Millisecond}, src)
	waitSent(t, f, "bowl-2", 20)

	// The outage: bowl-1's backlog piles up, bowl-2's batch goes
	// unacknowledged past AckTimeout.
	b.down()
	before := len(batches(t, b.rec.Messages()))
	if err := o.Append(ctx, telemetry("bowl-1", backlog, 20*time.Millisecond), nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Append(ctx, telemetry("bowl-2", 10, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Append(ctx, telemetry("bowl-3", 10, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ackTimeout + 100*time.Millisecond) // bowl-2's 1..20 are due again
	round := src.roundsSoFar()
	b.up()

	msgs := b.waitFor(t, 30*time.Second, "the backlog drained", func(m []mqttbroker.Message) bool {
		got := seqsOf(batches(t, m)[before:])
		return len(got["bowl-1"]) >= backlog && len(got["bowl-2"]) >= 30 && len(got["bowl-3"]) >= 10
	})
	bs := batches(t, msgs)[before:]
	perRound := src.since(round)

	first := seqsOf(bs[:1])
	if got := first["bowl-2"]; !slices.Equal(got, seqRange(1, 30)) {
		t.Errorf("first batch after the outage: bowl-2 seqs %v; want its resend and new data, 1..30", got)
	}
	if got := first["bowl-3"]; !slices.Equal(got, seqRange(1, 10)) {
		t.Errorf("first batch after the outage: bowl-3 seqs %v; want its new data, 1..10", got)
	}
	if got := first["bowl-1"]; len(got) == 0 || got[0] != 1 {
		t.Errorf("first batch after the outage: bowl-1 seqs %v; want a share of its backlog from seq 1", got)
	}
	for i, bt := range bs {
		if n := sampleCount(bs[i : i+1]); n > maxSamples {
			t.Errorf("batch %d after the outage: %d samples; want at most BatchMaxSamples %d", i, n, maxSamples)
		}
		for _, s := range bt.Things {
			if !slices.IsSortedFunc(s.Samples, func(a, b batch.Sample) int { return int(a.Seq) - int(b.Seq) }) {
				t.Errorf("batch %d %s samples not in seq order", i, s.Thing)
			}
		}
	}
	got := seqsOf(bs)
	for th, n := range map[string]uint64{"bowl-1": backlog, "bowl-2": 30, "bowl-3": 10} {
		for s := uint64(1); s <= n; s++ {
			if !slices.Contains(got[th], s) {
				t.Fatalf("%s seq %d never sent after the outage", th, s)
			}
		}
	}
	// The rounds after the outage send a batch each until the backlog
	// is drained: count their reads.
	if len(perRound) < len(bs) {
		t.Fatalf("%d batch rounds after the outage for %d batches", len(perRound), len(bs))
	}
	reads := 0
	for _, n := range perRound[:len(bs)] {
		reads += n
	}
	t.Logf("after the outage: %d batches for %d samples of 3 bowls (BatchMaxSamples %d), %d telemetry reads: %.2f per batch, %v",
		len(bs), sampleCount(bs), maxSamples, reads, float64(reads)/float64(len(bs)), perRound[:len(bs)])
}

// TestFillSharesSplitsTheBudget fills one batch from an outbox directly:
// the budget is split evenly over the things with wanted data, what a
// thing leaves goes to the others, each thing's samples are its lowest
// wanted seqs in order, and a thing is read at most once per pass.
func TestFillSharesSplitsTheBudget(t *testing.T) {
	tests := []struct {
		name   string
		stored map[string]int // records per thing
		budget int
		want   map[string]int // samples per thing in the batch
		left   int
		reads  int
	}{
		{"backlog beside small things", map[string]int{"a": 1000, "b": 30, "c": 10}, 100, map[string]int{"a": 60, "b": 30, "c": 10}, 0, 4},
		{"two backlogs halve it", map[string]int{"a": 1000, "b": 1000}, 100, map[string]int{"a": 50, "b": 50}, 0, 2},
		{"three backlogs, rounded up in order", map[string]int{"a": 1000, "b": 1000, "c": 1000}, 100, map[string]int{"a": 34, "b": 34, "c": 32}, 0, 3},
		{"share left over twice", map[string]int{"a": 1000, "b": 45, "c": 20}, 120, map[string]int{"a": 55, "b": 45, "c": 20}, 0, 6},
		{"everything fits", map[string]int{"a": 30, "b": 20}, 100, map[string]int{"a": 30, "b": 20}, 50, 2},
		{"budget smaller than the things", map[string]int{"a": 10, "b": 10, "c": 10}, 2, map[string]int{"a": 1, "b": 1}, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &countingSource{Outbox: openOutbox(t)}
			var things []string
			for th, n := range tt.stored {
				things = append(things, th)
				if err := src.Append(t.Context(), telemetry(th, n, time.Second), nil); err != nil {
					t.Fatal(err)
				}
			}
			slices.Sort(things)
			f, err := New(Config{Broker: "tcp://127.0.0.1:1883", Tenant: "t1", ClientID: "gw-1", Rule: testRule, Logger: testLogger(t)}, src)
			if err != nil {
				t.Fatal(err)
			}
			p := &pump{f: f, sctx: t.Context()}
			var fills []*thingFill
			for _, th := range things {
				fills = append(fills, &thingFill{thing: th, wanted: f.sent.wanted(th, time.Now())})
			}
			src.rounds = []int{0}
			left, err := p.fillShares(f.sent.newBatch(), fills, tt.budget)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, fl := range fills {
				for i, s := range fl.samples {
					if s.Seq != uint64(i+1) {
						t.Fatalf("%s sample %d seq %d; want %d (its lowest wanted seqs, in order)", fl.thing, i, s.Seq, i+1)
					}
				}
				if len(fl.samples) > 0 {
					got[fl.thing] = len(fl.samples)
				}
			}
			if !maps.Equal(got, tt.want) || left != tt.left {
				t.Errorf("fillShares(budget %d) of %v = %v, %d left; want %v, %d left", tt.budget, tt.stored, got, left, tt.want, tt.left)
			}
			if reads := src.since(0)[0]; reads != tt.reads {
				t.Errorf("telemetry reads = %d; want %d", reads, tt.reads)
			}
		})
	}
}

// TestFillSharesResendsFirst: a thing's resend past AckTimeout is its
// lowest wanted seqs, so it comes first in its share, read with the
// unsent seqs after it in one interval; seqs in flight or sent within
// AckTimeout are skipped.
func TestFillSharesResendsFirst(t *testing.T) {
	src := &countingSource{Outbox: openOutbox(t)}
	if err := src.Append(t.Context(), append(telemetry("a", 1000, time.Second), telemetry("b", 100, time.Second)...), nil); err != nil {
		t.Fatal(err)
	}
	f, err := New(Config{Broker: "tcp://127.0.0.1:1883", Tenant: "t1", ClientID: "gw-1", Rule: testRule, Logger: testLogger(t)}, src)
	if err != nil {
		t.Fatal(err)
	}
	// b: 1..10 sent an hour ago (due), 11..20 sent just now, 21..30 in
	// flight; 31..100 never sent.
	now := time.Now()
	old, recent, flying := f.sent.newBatch(), f.sent.newBatch(), f.sent.newBatch()
	f.sent.claim(old, "b", interval{1, 10}, seqRange(1, 10))
	f.sent.sent(old, now.Add(-time.Hour))
	f.sent.claim(recent, "b", interval{11, 20}, seqRange(11, 20))
	f.sent.sent(recent, now)
	f.sent.claim(flying, "b", interval{21, 30}, seqRange(21, 30))

	p := &pump{f: f, sctx: t.Context()}
	fills := []*thingFill{
		{thing: "a", wanted: f.sent.wanted("a", now.Add(-45*time.Minute))},
		{thing: "b", wanted: f.sent.wanted("b", now.Add(-45*time.Minute))},
	}
	src.rounds = []int{0}
	if _, err := p.fillShares(f.sent.newBatch(), fills, 40); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, s := range fills[1].samples {
		got = append(got, s.Seq)
	}
	want := append(seqRange(1, 10), seqRange(31, 40)...)
	if !slices.Equal(got, want) {
		t.Fatalf("b's samples = %v; want the resend 1..10, then unsent 31..40", got)
	}
	if n := len(fills[0].samples); n != 20 {
		t.Fatalf("a's samples = %d; want its share, 20", n)
	}
}
