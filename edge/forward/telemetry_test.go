package forward

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// The wire v2 tests: batches through Basic Ingest, deletion only on a
// cloud ack. The embedded broker stands in for AWS IoT (it accepts the
// $aws/rules/ topics as ordinary ones); the test publishes the acks.

var v2Topic = wire.BasicIngestTopic(testRule, wire.Topic{Tenant: "t1", Thing: "gw-1", Kind: wire.KindBatch})

// batches decodes every batch the broker accepted, in order.
func batches(t testing.TB, msgs []mqttbroker.Message) []batch.Batch {
	t.Helper()
	var out []batch.Batch
	for _, m := range msgs {
		if m.Topic != v2Topic {
			if strings.Contains(m.Topic, "/telemetry") {
				t.Fatalf("wire v2 gateway published %s; want only %s for telemetry", m.Topic, v2Topic)
			}
			continue
		}
		b, err := batch.Decode(m.Payload)
		if err != nil {
			t.Fatalf("batch payload: %v", err)
		}
		out = append(out, b)
	}
	return out
}

// seqsOf lists, per thing, the seqs the batches carry (repeats included).
func seqsOf(bs []batch.Batch) map[string][]uint64 {
	out := map[string][]uint64{}
	for _, b := range bs {
		for _, s := range b.Things {
			for _, x := range s.Samples {
				out[s.Thing] = append(out[s.Thing], x.Seq)
			}
		}
	}
	return out
}

func sampleCount(bs []batch.Batch) int {
	n := 0
	for _, b := range bs {
		for _, s := range b.Things {
			n += len(s.Samples)
		}
	}
	return n
}

// sendAck publishes a cloud ack on the gateway's ack topic and waits until
// the forwarder has handled it (applied, ignored or refused).
func sendAck(t *testing.T, b *testBroker, f *Forwarder, m wire.AckMessage) {
	t.Helper()
	p, err := wire.EncodeAck(m)
	if err != nil {
		t.Fatal(err)
	}
	handled := func() int64 { s := f.Status().Telemetry; return s.AcksApplied + s.AcksIgnored + s.AcksBad }
	before := handled()
	if err := b.srv.Server().Publish(wire.AckTopic("t1", "gw-1"), p, false, 1); err != nil {
		t.Fatalf("publish ack: %v", err)
	}
	testkit.WaitFor(t, "the ack to be handled", 30*time.Second, func() bool { return handled() > before })
}

// waitSent waits until every seq of thing up to last is PUBACKed.
func waitSent(t *testing.T, f *Forwarder, thing string, last uint64) {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprintf("%s seq %d PUBACKed", thing, last), 30*time.Second, func() bool {
		f.sent.mu.Lock()
		defer f.sent.mu.Unlock()
		st := f.sent.things[thing]
		return st != nil && st.high >= last
	})
}

func pendingSeqs(t *testing.T, o *outbox.Outbox, thing string) []uint64 {
	t.Helper()
	recs, err := o.Telemetry(t.Context(), thing, 0, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, r := range recs {
		out = append(out, r.Seq)
	}
	return out
}

func seqRange(first, last uint64) []uint64 {
	var out []uint64
	for s := first; s <= last; s++ {
		out = append(out, s)
	}
	return out
}

// (a) A gateway that never gets a cloud ack deletes nothing on PUBACK,
// keeps everything (the disk cap alone drops, and reports it) and sends it
// all again once AckTimeout has passed.
func TestNoCloudAckKeepsEverythingAndResendsAfterAckTimeout(t *testing.T) {
	ctx := context.Background()
	o, err := outbox.Open(outbox.Config{Path: filepath.Join(t.TempDir(), "outbox.db"), MaxBytes: 64 << 10, EventReserve: 16 << 10, TelemetryTTL: -1, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	const perThing = 200
	for _, th := range []string{"bowl-1", "bowl-2"} {
		if err := o.Append(ctx, telemetry(th, perThing, time.Second), nil); err != nil {
			t.Fatal(err)
		}
	}
	b := startBroker(t, nil)
	const ackTimeout = 2 * time.Second
	f, _ := runForwarder(t, Config{Broker: b.URL, BatchInterval: 200 * time.Millisecond, AckTimeout: ackTimeout}, o)
	first := time.Now()
	b.waitFor(t, 30*time.Second, "the first batch", func(m []mqttbroker.Message) bool { return sampleCount(batches(t, m)) >= 2*perThing })
	waitSent(t, f, "bowl-1", perThing)
	waitSent(t, f, "bowl-2", perThing)
	// PUBACKed, not acknowledged by the cloud: nothing leaves the outbox,
	// and nothing is sent twice before the timeout.
	time.Sleep(ackTimeout / 2)
	if s, _ := o.Stats(); s.Telemetry.Records != 2*perThing {
		t.Fatalf("telemetry records after PUBACK = %d; want all %d kept until a cloud ack", s.Telemetry.Records, 2*perThing)
	}
	if n := sampleCount(batches(t, b.rec.Messages())); n != 2*perThing && time.Since(first) < ackTimeout {
		t.Fatalf("%d samples sent before the ack timeout; want each of the %d once", n, 2*perThing)
	}
	msgs := b.waitFor(t, 30*time.Second, "the resend", func(m []mqttbroker.Message) bool { return sampleCount(batches(t, m)) >= 4*perThing })
	if el := time.Since(first); el < ackTimeout {
		t.Fatalf("resent after %s; want not before the ack timeout %s", el, ackTimeout)
	}
	for th, seqs := range seqsOf(batches(t, msgs)) {
		for s := uint64(1); s <= perThing; s++ {
			if n := countOf(seqs, s); n < 2 {
				t.Fatalf("%s seq %d sent %d times; want twice (sent, then resent after the ack timeout)", th, s, n)
			}
		}
	}

	// More than the disk cap, still no ack: the cap drops the oldest and
	// reports it; everything else is kept.
	for i := 0; i < 20; i++ {
		if err := o.Append(ctx, telemetry("bowl-1", 100, time.Second), nil); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := o.Stats()
	if s.Telemetry.Dropped == 0 || s.Telemetry.Records+s.Telemetry.Dropped != 2*perThing+2000 {
		t.Fatalf("after 2000 more samples: %d kept, %d dropped; want drops under the cap and kept + dropped = %d", s.Telemetry.Records, s.Telemetry.Dropped, 2*perThing+2000)
	}
	t.Logf("no cloud ack: %d samples kept, %d dropped by the disk cap (reported), nothing removed on PUBACK", s.Telemetry.Records, s.Telemetry.Dropped)
}

func countOf(seqs []uint64, s uint64) int {
	n := 0
	for _, x := range seqs {
		if x == s {
			n++
		}
	}
	return n
}

// (b) An ack that names another outbox instance deletes nothing and is
// counted as ignored.
func TestAckOfAnotherOutboxDeletesNothing(t *testing.T) {
	o := openOutbox(t)
	if err := o.Append(t.Context(), telemetry("gw-1:bowl-1", 10, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, nil)
	f, _ := runForwarder(t, Config{Broker: b.URL, BatchInterval: time.Hour, AckTimeout: 2 * time.Hour}, o)
	waitSent(t, f, "gw-1:bowl-1", 10)
	other := "00000000000000000000000000000000"
	sendAck(t, b, f, wire.AckMessage{Outbox: other, Things: map[string][]wire.Range{"gw-1:bowl-1": {{First: 1, Last: 10}}}, At: t0})
	if got := pendingSeqs(t, o, "gw-1:bowl-1"); !slices.Equal(got, seqRange(1, 10)) {
		t.Fatalf("pending after an ack of outbox %s = %v; want 1..10 (this outbox is %s)", other, got, o.ID())
	}
	if s := f.Status().Telemetry; s.AcksIgnored != 1 || s.AcksApplied != 0 {
		t.Fatalf("acks ignored, applied = %d, %d; want 1, 0", s.AcksIgnored, s.AcksApplied)
	}
	// A payload that is no ack is counted, and the forwarder goes on.
	if err := b.srv.Server().Publish(wire.AckTopic("t1", "gw-1"), []byte(`{"v":1,"outbox":""}`), false, 1); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the bad ack counted", 30*time.Second, func() bool { return f.Status().Telemetry.AcksBad == 1 })
	sendAck(t, b, f, wire.AckMessage{Outbox: o.ID(), Things: map[string][]wire.Range{"gw-1:bowl-1": {{First: 1, Last: 10}}}, At: t0})
	if got := pendingSeqs(t, o, "gw-1:bowl-1"); len(got) != 0 {
		t.Fatalf("pending after this outbox's ack = %v; want none", got)
	}
}

// (c) An ack that names seqs beyond what was sent deletes nothing beyond.
func TestAckBeyondSentDeletesOnlySent(t *testing.T) {
	o := openOutbox(t)
	if err := o.Append(t.Context(), telemetry("bowl-1", 10, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, nil)
	f, _ := runForwarder(t, Config{Broker: b.URL, BatchInterval: time.Hour, AckTimeout: 2 * time.Hour}, o)
	waitSent(t, f, "bowl-1", 10)
	// 11..20 are stored after the only batch of the hour: never sent.
	if err := o.Append(t.Context(), telemetry("bowl-1", 10, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Append(t.Context(), telemetry("bowl-2", 5, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	sendAck(t, b, f, wire.AckMessage{Outbox: o.ID(), Things: map[string][]wire.Range{
		"bowl-1": {{First: 1, Last: 1000}}, // a forged or stale ack
		"bowl-2": {{First: 1, Last: 5}},    // never sent at all
	}, At: t0})
	if got := pendingSeqs(t, o, "bowl-1"); !slices.Equal(got, seqRange(11, 20)) {
		t.Fatalf("bowl-1 pending after ack 1..1000 with 1..10 sent = %v; want 11..20", got)
	}
	if got := pendingSeqs(t, o, "bowl-2"); !slices.Equal(got, seqRange(1, 5)) {
		t.Fatalf("bowl-2 pending after an ack of unsent seqs = %v; want 1..5", got)
	}
	if s := f.Status().Telemetry; s.AckedSamples != 10 {
		t.Fatalf("acked samples = %d; want 10", s.AckedSamples)
	}
}

// (d) An ack deletes exactly its ranges; the holes stay and are sent again
// after AckTimeout, and only they.
func TestAckDeletesExactlyItsRangesHolesAreResent(t *testing.T) {
	o := openOutbox(t)
	if err := o.Append(t.Context(), telemetry("bowl-1", 20, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, nil)
	const ackTimeout = 1500 * time.Millisecond
	f, _ := runForwarder(t, Config{Broker: b.URL, BatchInterval: 100 * time.Millisecond, AckTimeout: ackTimeout}, o)
	waitSent(t, f, "bowl-1", 20)
	sendAck(t, b, f, wire.AckMessage{Outbox: o.ID(), Things: map[string][]wire.Range{"bowl-1": {{First: 1, Last: 5}, {First: 8, Last: 12}, {First: 15, Last: 20}}}, At: t0})
	holes := []uint64{6, 7, 13, 14}
	if got := pendingSeqs(t, o, "bowl-1"); !slices.Equal(got, holes) {
		t.Fatalf("pending after the ack = %v; want the holes %v", got, holes)
	}
	if s := f.Status().Telemetry; s.UnackedSent != int64(len(holes)) {
		t.Fatalf("unacked sent samples = %d; want %d", s.UnackedSent, len(holes))
	}
	msgs := b.waitFor(t, 30*time.Second, "the holes resent", func(m []mqttbroker.Message) bool { return len(batches(t, m)) >= 2 })
	bs := batches(t, msgs)
	if got := seqsOf(bs[1:2])["bowl-1"]; !slices.Equal(got, holes) {
		t.Fatalf("resent seqs = %v; want exactly the holes %v", got, holes)
	}
	// The resend is acknowledged: nothing is left.
	waitSent(t, f, "bowl-1", 20)
	sendAck(t, b, f, wire.AckMessage{Outbox: o.ID(), Things: map[string][]wire.Range{"bowl-1": {{First: 1, Last: 20}}}, At: t0})
	if got := pendingSeqs(t, o, "bowl-1"); len(got) != 0 {
		t.Fatalf("pending after acking the holes = %v; want none", got)
	}
}

// (e), (h) One batch per interval carries every thing of the gateway, and
// the bytes per sample are logged. Four bowls at 20 Hz for a few intervals.
func TestOneBatchPerIntervalCarriesEveryThing(t *testing.T) {
	o := openOutbox(t)
	b := startBroker(t, nil)
	const interval = 500 * time.Millisecond
	things := []string{"gw-1:bowl-1", "gw-1:bowl-2", "gw-1:bowl-3", "gw-1:bowl-4"}
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var es []outbox.Entry
			for j, th := range things {
				// Integer milligrams, as the MCU sends them, in grams.
				es = append(es, outbox.Entry{Lane: outbox.Telemetry, Thing: th, At: t0.Add(time.Duration(i) * 50 * time.Millisecond), Type: "weight_g", Value: float64(400_000+j*1000+(i%7)*13) / 1000})
			}
			if err := o.Append(ctx, es, nil); err != nil && ctx.Err() == nil {
				t.Errorf("append: %v", err)
				return
			}
		}
	})
	// Let the appender start, so the first batch has every bowl.
	testkit.WaitFor(t, "samples of every bowl", 30*time.Second, func() bool { th, _ := o.Things(outbox.Telemetry); return len(th) == len(things) })
	f, _ := runForwarder(t, Config{Broker: b.URL, BatchInterval: interval, AckTimeout: time.Hour}, o)
	start := time.Now()
	const intervals = 6
	time.Sleep(intervals * interval)
	stop()
	wg.Wait()
	elapsed := time.Since(start)
	msgs := dataMessages(b.rec.Messages())
	bs := batches(t, msgs)
	if max := int(elapsed/interval) + 2; len(bs) > max || len(bs) < 2 {
		t.Fatalf("%d batches in %s at one per %s; want about %d", len(bs), elapsed, interval, intervals)
	}
	bytes := 0
	for _, m := range msgs {
		if m.Topic == v2Topic {
			bytes += len(m.Payload)
		}
	}
	for i, bt := range bs {
		if bt.Outbox != o.ID() {
			t.Fatalf("batch %d outbox = %q; want %q", i, bt.Outbox, o.ID())
		}
		var got []string
		for _, s := range bt.Things {
			got = append(got, s.Thing)
			if !slices.IsSortedFunc(s.Samples, func(a, b batch.Sample) int { return int(a.Seq) - int(b.Seq) }) {
				t.Fatalf("batch %d %s samples not in seq order", i, s.Thing)
			}
			for _, x := range s.Samples {
				if x.Scale != 3 || x.Value < 400_000 || x.Value > 403_078 {
					t.Fatalf("batch %d %s seq %d = %d at scale %d; want the integer milligrams 400000..403078 at scale 3", i, s.Thing, x.Seq, x.Value, x.Scale)
				}
			}
		}
		if !slices.Equal(got, things) {
			t.Fatalf("batch %d things = %v; want every bowl %v", i, got, things)
		}
	}
	n := sampleCount(bs)
	perInterval := float64(len(bs)) / (elapsed.Seconds() / interval.Seconds())
	t.Logf("%d batch messages in %s: %.2f per batch interval, so %.2f per gateway per minute at the default interval of 1m; %d samples of %d bowls in %d bytes: %.2f bytes per sample",
		len(bs), elapsed.Round(time.Millisecond), perInterval, perInterval, n, len(things), bytes, float64(bytes)/float64(n))
	if got := f.Status().Telemetry.Batches; got < int64(len(bs)) {
		t.Errorf("status batches = %d; want at least the %d received", got, len(bs))
	}
}

// Events go at once on their own topic and leave on PUBACK, before any
// telemetry batch, as in wire v1.
func TestV2EventsFirstAndRemovedOnPuback(t *testing.T) {
	o := openOutbox(t)
	if err := o.Append(t.Context(), append(telemetry("bowl-1", 5, time.Second), event("bowl-1", "e1")), nil); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, nil)
	runForwarder(t, Config{Broker: b.URL, BatchInterval: time.Hour, AckTimeout: 2 * time.Hour}, o)
	msgs := dataMessages(b.waitFor(t, 30*time.Second, "event and batch", func(m []mqttbroker.Message) bool { return len(dataMessages(m)) >= 2 }))
	if !strings.HasSuffix(msgs[0].Topic, "/bowl-1/events") || msgs[1].Topic != v2Topic {
		t.Fatalf("topics = %s, %s; want the event, then the batch", msgs[0].Topic, msgs[1].Topic)
	}
	testkit.WaitFor(t, "the event removed on PUBACK", 30*time.Second, func() bool { s, _ := o.Stats(); return s.Events.Records == 0 })
	if s, _ := o.Stats(); s.Telemetry.Records != 5 {
		t.Fatalf("telemetry records = %d; want 5 (kept until a cloud ack)", s.Telemetry.Records)
	}
}

// A restart (a new forwarder on the same outbox) counts everything in the
// outbox as unsent.
func TestRestartSendsEverythingPending(t *testing.T) {
	o := openOutbox(t)
	if err := o.Append(t.Context(), telemetry("bowl-1", 30, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, nil)
	f, cancel := runForwarder(t, Config{Broker: b.URL, BatchInterval: time.Hour, AckTimeout: 2 * time.Hour}, o)
	waitSent(t, f, "bowl-1", 30)
	cancel()
	runForwarder(t, Config{Broker: b.URL, BatchInterval: time.Hour, AckTimeout: 2 * time.Hour}, o)
	msgs := b.waitFor(t, 30*time.Second, "the batch again", func(m []mqttbroker.Message) bool { return len(batches(t, m)) >= 2 })
	if got := seqsOf(batches(t, msgs)[1:2])["bowl-1"]; !slices.Equal(got, seqRange(1, 30)) {
		t.Fatalf("after restart sent %v; want 1..30", got)
	}
}

// (h) Bytes per sample of a gateway's minute, logged, not asserted: four
// bowls holding a steady weight with the load cell's milligram noise,
// at 1 Hz and at 10 Hz, forwarded through the broker as one batch.
func TestBytesPerSampleOfAMinute(t *testing.T) {
	for _, hz := range []int{1, 10} {
		t.Run(fmt.Sprintf("%dHz", hz), func(t *testing.T) {
			o := openOutbox(t)
			var es []outbox.Entry
			noise := uint32(1)
			for i := range 60 * hz {
				for j := range 4 {
					noise = noise*1664525 + 1013904223 // a fixed LCG: the same bytes every run
					mg := 350_000 + j*25_000 + int(noise>>24)%40 - 20
					es = append(es, outbox.Entry{Lane: outbox.Telemetry, Thing: fmt.Sprintf("gw-1:bowl-%d", j+1), At: t0.Add(time.Duration(i) * time.Second / time.Duration(hz)), Type: "weight_g", Value: float64(mg) / 1000})
				}
			}
			if err := o.Append(t.Context(), es, nil); err != nil {
				t.Fatal(err)
			}
			b := startBroker(t, nil)
			runForwarder(t, Config{Broker: b.URL, BatchInterval: time.Hour, AckTimeout: 2 * time.Hour}, o)
			msgs := b.waitFor(t, 30*time.Second, "the batch", func(m []mqttbroker.Message) bool { return sampleCount(batches(t, m)) >= len(es) })
			bytes, n := 0, 0
			for _, m := range msgs {
				if m.Topic == v2Topic {
					bytes += len(m.Payload)
					n++
				}
			}
			t.Logf("a minute of 4 bowls at %d Hz: %d samples in %d message(s), %d bytes: %.2f bytes per sample", hz, len(es), n, bytes, float64(bytes)/float64(len(es)))
		})
	}
}

// With an events rule, events go by Basic Ingest to that rule, each on its
// thing's events topic under the rule's prefix, and still leave the outbox
// on their PUBACK; without one they go through the broker (the test
// above).
func TestEventsGoToTheEventsRule(t *testing.T) {
	o := openOutbox(t)
	if err := o.Append(t.Context(), []outbox.Entry{event("gw-1", "e1"), event("gw-1:kitchen", "e2")}, nil); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, nil)
	const rule = "bowline_dev_events"
	runForwarder(t, Config{Broker: b.URL, EventsRule: rule, BatchInterval: time.Hour, AckTimeout: 2 * time.Hour}, o)
	msgs := dataMessages(b.waitFor(t, 30*time.Second, "two events", func(m []mqttbroker.Message) bool { return len(dataMessages(m)) >= 2 }))
	var got []string
	for _, m := range msgs {
		got = append(got, m.Topic)
	}
	want := []string{
		wire.BasicIngestTopic(rule, wire.Topic{Tenant: "t1", Thing: "gw-1", Kind: wire.KindEvents}),
		wire.BasicIngestTopic(rule, wire.Topic{Tenant: "t1", Thing: "gw-1:kitchen", Kind: wire.KindEvents}),
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("event topics = %v; want %v", got, want)
	}
	testkit.WaitFor(t, "the events removed on PUBACK", 30*time.Second, func() bool { s, _ := o.Stats(); return s.Events.Records == 0 })
}
