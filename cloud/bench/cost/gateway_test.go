package main

import (
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// testGateway is a gateway with a source and a clock the test moves.
func testGateway(t *testing.T, now *time.Time) *gateway {
	t.Helper()
	env := Env{Now: func() time.Time { return *now }, Bowls: map[string][]string{"gw-1": {"gw-1:0"}}}
	g := newGateway(runConfig{BatchEvery: time.Minute, AckTimeout: 30 * time.Minute, SampleHz: 1, Speed: 1}, env, "gw-1")
	g.src = newSource("gw-1", env.Bowls["gw-1"], 1, 1, *now)
	return g
}

// send builds the next batch and marks it sent, as run does on PUBACK.
func send(t *testing.T, g *gateway, now time.Time) batch.Batch {
	t.Helper()
	payload, series, err := g.next()
	if err != nil {
		t.Fatal(err)
	}
	b, err := batch.Decode(payload)
	if err != nil {
		t.Fatalf("Decode of the gateway's batch: %v", err)
	}
	g.pending = append(g.pending, sentBatch{at: now, series: series})
	return b
}

func ack(t *testing.T, outbox string, first, last uint64) []byte {
	t.Helper()
	b, err := wire.EncodeAck(wire.AckMessage{Outbox: outbox, Things: map[string][]wire.Range{"gw-1:0": {{First: first, Last: last}}}, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An ack of the gateway's outbox deletes exactly the seqs it names; one of
// another outbox or one that does not decode deletes nothing.
func TestGatewayAppliesAcks(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	g := testGateway(t, &now)
	send(t, g, now) // seqs 1..60
	now = now.Add(time.Minute)
	send(t, g, now) // seqs 61..120
	g.apply(ack(t, "ob-other", 1, 120))
	g.apply([]byte("{"))
	g.apply(ack(t, "ob-gw-1", 1, 90))
	c := g.snapshot()
	if c.AcksApplied != 1 || c.AcksIgnored != 1 || c.AcksBad != 1 {
		t.Errorf("acks applied/ignored/bad = %d/%d/%d; want 1/1/1", c.AcksApplied, c.AcksIgnored, c.AcksBad)
	}
	if c.SamplesAcked != 90 || c.Unacked != 30 {
		t.Errorf("samples acked %d, unacked %d; want 90, 30", c.SamplesAcked, c.Unacked)
	}
}

// What stays unacknowledged AckTimeout after it was sent goes again in
// front of the next batch's samples, in seq order.
func TestGatewayResendsAfterAckTimeout(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	g := testGateway(t, &now)
	send(t, g, now) // seqs 1..60, never acknowledged
	now = now.Add(29 * time.Minute)
	if b := send(t, g, now); len(b.Things[0].Samples) != 60 {
		t.Fatalf("batch before the timeout has %d samples; want 60", len(b.Things[0].Samples))
	}
	now = now.Add(2 * time.Minute)
	b := send(t, g, now)
	s := b.Things[0].Samples
	if len(s) != 120 || s[0].Seq != 1 || s[len(s)-1].Seq != 180 {
		t.Fatalf("batch after the timeout: %d samples, seqs %d..%d; want 120, 1..180", len(s), s[0].Seq, s[len(s)-1].Seq)
	}
	if c := g.snapshot(); c.Resent != 60 {
		t.Errorf("resent = %d; want 60", c.Resent)
	}
}
