package forward

import (
	"context"
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
