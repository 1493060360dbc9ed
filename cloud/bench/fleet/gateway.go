package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// gateway is one light simulated gateway: one MQTT connection with a
// persistent session, subscribed to its own ack topic, publishing one
// batch of every bowl's samples per interval at QoS 1 to its Basic Ingest
// topic. It keeps what it sent until an ack names it, as the edge
// forwarder does, and sends again what stays unacknowledged past the
// ack timeout. It is not an agent: no outbox on disk, no detection.
type gateway struct {
	name, outbox, topic string
	bowls               []*bowl
	client              paho.Client

	mu       sync.Mutex
	pending  []*sentBatch
	acked    map[string]*rangeSet // per thing: every seq an ack named, clipped to what was sent
	counts   gatewayCounts
	lastSent time.Time
}

// bowl is one thing of a gateway: its next seq and its load cell.
type bowl struct {
	thing string
	next  uint64 // seq of the next sample
	grams float64
}

// sentBatch is one published batch until every thing of it is
// acknowledged: its payload (sent again as it was) and each thing's seqs.
type sentBatch struct {
	payload []byte
	things  []thingRange
	samples int
	firstAt time.Time // first publish
	lastAt  time.Time // latest publish
	unacked int       // things not yet covered by an ack
	resends int
}

type thingRange struct {
	thing string
	r     wire.Range
	acked bool
}

// gatewayCounts is what one gateway counts.
type gatewayCounts struct {
	Published, Pubacked, PublishErrors, Resends int64
	SamplesSent, SamplesAcked                   int64
	PayloadBytes                                int64
	MaxPayload                                  int
	Acks, AcksOtherOutbox, AcksBad              int64
	AckedBeyondSent                             int64
}

func newGateway(name string, things []string, stack string, rng *rand.Rand) *gateway {
	g := &gateway{name: name, outbox: "ob-" + name, acked: map[string]*rangeSet{},
		topic: wire.BasicIngestTopic(wire.RuleName(stack, wire.TelemetryRule), wire.Topic{Tenant: tenant, Thing: name, Kind: wire.KindBatch})}
	for _, t := range things {
		g.bowls = append(g.bowls, &bowl{thing: t, next: 1, grams: 200 + 300*rng.Float64()})
		g.acked[t] = &rangeSet{}
	}
	return g
}

// noise is a table of standard normal draws the load cells read from at a
// random offset per batch: the encoder sees the same statistics as with
// fresh draws, at a fraction of the CPU.
var noise = func() []float64 {
	r := rand.New(rand.NewPCG(1, 2))
	n := make([]float64, 1<<16)
	for i := range n {
		n[i] = r.NormFloat64()
	}
	return n
}()

// next builds and encodes the batch of the interval that ends at end: hz
// samples per second per bowl, a slow drift with 0.1 g rms noise rounded
// to 0.1 g, integer milligrams at scale 3 (the figures of the
// firmware-bridge/sim load-cell model and of cloud/bench/cost).
func (g *gateway) next(end time.Time, interval time.Duration, hz float64, rng *rand.Rand) (*sentBatch, error) {
	n := max(1, int(math.Round(hz*interval.Seconds())))
	step := time.Duration(float64(time.Second) / hz)
	start := end.Add(-time.Duration(n) * step)
	b := batch.Batch{Outbox: g.outbox, SentAt: end}
	sb := &sentBatch{}
	for _, bw := range g.bowls {
		s := batch.Series{Thing: bw.thing, Samples: make([]batch.Sample, n)}
		off := rng.IntN(len(noise))
		for i := range s.Samples {
			bw.grams += noise[(off+2*i)%len(noise)] * 0.002
			reading := math.Round((bw.grams+noise[(off+2*i+1)%len(noise)]*0.1)*10) / 10
			s.Samples[i] = batch.Sample{Seq: bw.next + uint64(i), At: start.Add(time.Duration(i) * step), Kind: "weight_g",
				Value: int64(math.Round(reading * 1000)), Scale: 3}
		}
		sb.things = append(sb.things, thingRange{thing: bw.thing, r: wire.Range{First: bw.next, Last: bw.next + uint64(n) - 1}})
		bw.next += uint64(n)
		sb.samples += n
		b.Things = append(b.Things, s)
	}
	payload, err := batch.Encode(b)
	if err != nil {
		return nil, fmt.Errorf("gateway %s: encode batch: %w", g.name, err)
	}
	sb.payload, sb.unacked = payload, len(sb.things)
	return sb, nil
}

// onAck applies one acknowledgement: it records the ranges it names (for
// the loss check) and forgets every sent batch whose seqs it covers.
func (g *gateway) onAck(payload []byte) {
	m, err := wire.DecodeAck(payload)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.counts.AcksBad++
		return
	}
	if m.Outbox != g.outbox {
		// An ack of another outbox instance: a gateway ignores it.
		g.counts.AcksOtherOutbox++
		return
	}
	g.counts.Acks++
	for thing, rs := range m.Things {
		set, ok := g.acked[thing]
		if !ok {
			continue
		}
		var sent uint64
		for _, bw := range g.bowls {
			if bw.thing == thing {
				sent = bw.next - 1
			}
		}
		for _, r := range rs {
			if r.Last > sent {
				g.counts.AckedBeyondSent += int64(r.Last - max(sent, r.First-1))
				if r.First > sent {
					continue
				}
				r.Last = sent
			}
			set.add(r)
		}
	}
	kept := g.pending[:0]
	for _, sb := range g.pending {
		for i := range sb.things {
			tr := &sb.things[i]
			if !tr.acked && g.acked[tr.thing].covers(tr.r) {
				tr.acked = true
				sb.unacked--
				g.counts.SamplesAcked += int64(tr.r.Last - tr.r.First + 1)
			}
		}
		if sb.unacked > 0 {
			kept = append(kept, sb)
		}
	}
	clear(g.pending[len(kept):])
	g.pending = kept
}

// due returns the batches unacknowledged for longer than timeout since
// they were last sent.
func (g *gateway) due(now time.Time, timeout time.Duration) []*sentBatch {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*sentBatch
	for _, sb := range g.pending {
		if now.Sub(sb.lastAt) >= timeout {
			out = append(out, sb)
		}
	}
	return out
}

// rangeSet is a sorted set of disjoint, merged seq ranges.
type rangeSet struct{ rs []wire.Range }

func (s *rangeSet) add(r wire.Range) {
	out := make([]wire.Range, 0, len(s.rs)+1)
	i := 0
	for ; i < len(s.rs) && s.rs[i].Last+1 < r.First; i++ {
		out = append(out, s.rs[i])
	}
	for ; i < len(s.rs) && s.rs[i].First <= r.Last+1; i++ {
		r.First, r.Last = min(r.First, s.rs[i].First), max(r.Last, s.rs[i].Last)
	}
	out = append(out, r)
	s.rs = append(out, s.rs[i:]...)
}

func (s *rangeSet) covers(r wire.Range) bool {
	for _, x := range s.rs {
		if x.First <= r.First && r.Last <= x.Last {
			return true
		}
	}
	return false
}

func (s *rangeSet) count() int64 {
	var n int64
	for _, r := range s.rs {
		n += int64(r.Last - r.First + 1)
	}
	return n
}
