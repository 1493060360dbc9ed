package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// gateway is one light simulated gateway that treats acknowledgements as
// edge/forward does (docs/telemetry-path.md, "The gateway"): it publishes
// one batch per BatchEvery on its Basic Ingest topic at QoS 1, counts a
// batch's seqs sent once PUBACKed, deletes exactly the seqs an ack of its
// outbox names, and puts whatever is still unacknowledged AckTimeout after
// it was sent into the next batch again. It keeps its unacknowledged
// samples in memory, not in an outbox file.
type gateway struct {
	rc  runConfig
	env Env
	id  string

	mu      sync.Mutex
	src     *source
	pending []sentBatch // sent and not yet acknowledged, oldest first
	counts  gatewayCounts
}

// sentBatch is what is left unacknowledged of one sent batch.
type sentBatch struct {
	at     time.Time // run clock when it was PUBACKed
	series []batch.Series
}

// gatewayCounts is what the gateways saw of the acks.
type gatewayCounts struct {
	// Batches published; Resent the samples in them that went again
	// after AckTimeout.
	Batches int64 `json:"batches"`
	Resent  int64 `json:"samples_resent"`
	// Acks delivered to a gateway: applied (its own outbox), ignored
	// (another outbox), bad (did not decode); the samples they deleted.
	AcksApplied  int64 `json:"acks_applied"`
	AcksIgnored  int64 `json:"acks_ignored"`
	AcksBad      int64 `json:"acks_bad"`
	SamplesAcked int64 `json:"samples_acked"`
	// Unacked is the samples held unacknowledged at the end; OldestUnacked
	// the oldest send among them, as an age on the run clock.
	Unacked       int64         `json:"samples_unacked"`
	OldestUnacked time.Duration `json:"oldest_unacked_ns"`
}

func newGateway(rc runConfig, env Env, id string) *gateway {
	return &gateway{rc: rc, env: env, id: id}
}

// run connects, subscribes to the gateway's ack topic at QoS 1 (as the
// forwarder does; acks are published at QoS 0, so they arrive at QoS 0
// and nothing is PUBACKed for them), calls ready, and publishes from
// begin until ctx ends, starting at a random offset so the fleet is not
// in step.
func (g *gateway) run(ctx context.Context, ready func(), begin <-chan struct{}) error {
	once := sync.OnceFunc(ready)
	defer once()
	c := paho.NewClient(paho.NewClientOptions().AddBroker(g.env.BrokerURL).SetClientID(g.id).
		SetCleanSession(true).SetAutoReconnect(true).SetKeepAlive(5 * time.Minute))
	if tok := c.Connect(); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
		return fmt.Errorf("connect: %v", tok.Error())
	}
	defer c.Disconnect(250)
	if tok := c.Subscribe(wire.AckTopic(g.env.Tenant, g.id), 1, func(_ paho.Client, m paho.Message) { g.apply(m.Payload()) }); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
		return fmt.Errorf("subscribe: %v", tok.Error())
	}
	once()
	select {
	case <-ctx.Done():
		return nil
	case <-begin:
	}
	topic := wire.BasicIngestTopic(wire.RuleName(g.env.Names.Stack, wire.TelemetryRule), wire.Topic{Tenant: g.env.Tenant, Thing: g.id, Kind: wire.KindBatch})
	every := time.Duration(float64(g.rc.BatchEvery) / g.rc.Speed)
	offset := time.Duration(randUint64() % uint64(every))
	g.mu.Lock()
	g.src = newSource(g.id, g.env.Bowls[g.id], g.rc.SampleHz, randUint64(), g.env.Now())
	g.mu.Unlock()
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(offset):
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		payload, series, err := g.next()
		if err != nil {
			return fmt.Errorf("encode batch: %w", err)
		}
		tok := c.Publish(topic, 1, false, payload)
		if !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("publish batch: %v", tok.Error())
		}
		g.mu.Lock()
		g.pending = append(g.pending, sentBatch{at: g.env.Now(), series: series})
		g.counts.Batches++
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// next encodes the next interval's batch with every sample still
// unacknowledged AckTimeout after it was sent in front of each bowl's new
// ones; those leave pending until the batch is PUBACKed again.
func (g *gateway) next() ([]byte, []batch.Series, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	payload, b, err := g.src.next(g.rc.BatchEvery)
	if err != nil {
		return nil, nil, err
	}
	expired := g.env.Now().Add(-g.rc.AckTimeout)
	n := 0
	for n < len(g.pending) && g.pending[n].at.Before(expired) {
		n++
	}
	if n == 0 {
		return payload, b.Things, nil
	}
	old := map[string][]batch.Sample{}
	for _, sb := range g.pending[:n] {
		for _, s := range sb.series {
			old[s.Thing] = append(old[s.Thing], s.Samples...)
		}
	}
	g.pending = slices.Delete(g.pending, 0, n)
	for i, s := range b.Things {
		if prev := old[s.Thing]; len(prev) > 0 {
			g.counts.Resent += int64(len(prev))
			b.Things[i].Samples = append(prev, s.Samples...)
		}
	}
	payload, err = batch.Encode(b)
	return payload, b.Things, err
}

// apply applies one acknowledgement: for its own outbox, it deletes the
// pending samples whose seq is inside the ranges named for their thing.
func (g *gateway) apply(payload []byte) {
	m, err := wire.DecodeAck(payload)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err != nil:
		g.counts.AcksBad++
		return
	case g.src == nil || m.Outbox != g.src.outbox:
		g.counts.AcksIgnored++
		return
	}
	g.counts.AcksApplied++
	acked := func(thing string, seq uint64) bool {
		for _, r := range m.Things[thing] {
			if seq >= r.First && seq <= r.Last {
				return true
			}
		}
		return false
	}
	kept := g.pending[:0]
	for _, sb := range g.pending {
		series := sb.series[:0]
		for _, s := range sb.series {
			before := len(s.Samples)
			s.Samples = slices.DeleteFunc(s.Samples, func(x batch.Sample) bool { return acked(s.Thing, x.Seq) })
			g.counts.SamplesAcked += int64(before - len(s.Samples))
			if len(s.Samples) > 0 {
				series = append(series, s)
			}
		}
		if len(series) > 0 {
			kept = append(kept, sentBatch{at: sb.at, series: series})
		}
	}
	clear(g.pending[len(kept):])
	g.pending = kept
}

// snapshot returns the gateway's counts with what it holds now.
func (g *gateway) snapshot() gatewayCounts {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.counts
	for _, sb := range g.pending {
		for _, s := range sb.series {
			c.Unacked += int64(len(s.Samples))
		}
	}
	if len(g.pending) > 0 {
		c.OldestUnacked = g.env.Now().Sub(g.pending[0].at)
	}
	return c
}

// sumGateways adds up every gateway's counts; OldestUnacked is the
// fleet's oldest.
func sumGateways(gws []*gateway) gatewayCounts {
	var t gatewayCounts
	for _, g := range gws {
		c := g.snapshot()
		t.Batches += c.Batches
		t.Resent += c.Resent
		t.AcksApplied += c.AcksApplied
		t.AcksIgnored += c.AcksIgnored
		t.AcksBad += c.AcksBad
		t.SamplesAcked += c.SamplesAcked
		t.Unacked += c.Unacked
		t.OldestUnacked = max(t.OldestUnacked, c.OldestUnacked)
	}
	return t
}

// since is c minus the counts at the window's start; what is held
// unacknowledged is c's.
func (c gatewayCounts) since(b gatewayCounts) gatewayCounts {
	return gatewayCounts{
		Batches: c.Batches - b.Batches, Resent: c.Resent - b.Resent,
		AcksApplied: c.AcksApplied - b.AcksApplied, AcksIgnored: c.AcksIgnored - b.AcksIgnored, AcksBad: c.AcksBad - b.AcksBad,
		SamplesAcked: c.SamplesAcked - b.SamplesAcked, Unacked: c.Unacked, OldestUnacked: c.OldestUnacked,
	}
}
