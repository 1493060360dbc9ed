package forward

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// batchTopic is where wire v2 batches go: the gateway's batch topic
// through AWS IoT Basic Ingest to the telemetry rule.
func (c Config) batchTopic() string {
	return wire.BasicIngestTopic(c.Rule, wire.Topic{Tenant: c.Tenant, Thing: c.Thing, Kind: wire.KindBatch})
}

// batchRound sends the gateway's telemetry batch when it is due: every
// thing's telemetry not sent yet, or sent and not acknowledged within
// AckTimeout, up to BatchMaxSamples, in one batch.Batch split into
// payloads of at most MaxPayload. When there is more than BatchMaxSamples
// to send, every thing gets a share (fillShares), so no thing's data waits
// behind another's backlog. The batch counts as sent when every payload
// is PUBACKed; if one is not, all of it counts as unsent again. Nothing
// is removed from the outbox here: only a cloud ack removes telemetry
// (ApplyAck).
func (p *pump) batchRound() (int, error) {
	f := p.f
	now := time.Now()
	if now.Before(p.nextBatch) {
		return 0, nil
	}
	p.nextBatch = now.Add(f.cfg.BatchInterval)
	things, err := f.src.Things(outbox.Telemetry)
	if err != nil {
		return 0, &sourceError{fmt.Errorf("list things with telemetry: %w", err)}
	}
	id := f.sent.newBatch()
	b := batch.Batch{Outbox: f.src.ID(), SentAt: f.cfg.Now().UTC()}
	expiredAt := now.Add(-f.cfg.AckTimeout)
	fills := make([]*thingFill, len(things))
	for i, thing := range things {
		fills[i] = &thingFill{thing: thing, wanted: f.sent.wanted(thing, expiredAt)}
	}
	budget, err := p.fillShares(id, fills, f.cfg.BatchMaxSamples)
	if err != nil {
		f.sent.release(id)
		return 0, err
	}
	claimed := false
	for _, fl := range fills {
		claimed = claimed || fl.claimed
		if len(fl.samples) > 0 {
			b.Things = append(b.Things, batch.Series{Thing: fl.thing, Samples: fl.samples})
		}
	}
	if budget == 0 {
		p.nextBatch = now // a backlog: the next batch at once
	}
	samples := 0
	for _, s := range b.Things {
		samples += len(s.Samples)
	}
	if samples == 0 {
		if claimed {
			f.sent.release(id)
		}
		return 0, nil
	}
	payloads, err := batch.Split(b, f.cfg.MaxPayload)
	if err != nil {
		f.sent.release(id)
		f.cfg.Logger.Error("telemetry batch does not split under max payload; kept, retried next interval", "samples", samples, "max_payload", f.cfg.MaxPayload, "err", err)
		return 0, nil
	}
	bytes := 0
	for _, pl := range payloads {
		bytes += len(pl)
	}
	f.cfg.Logger.Debug("sending telemetry batch", "samples", samples, "things", len(b.Things), "payloads", len(payloads), "bytes", bytes)
	done := &batchDone{pending: len(payloads)}
	sentAt := time.Now()
	onPuback := func() error {
		if done.acked() {
			f.sent.sent(id, sentAt)
		}
		return nil
	}
	onLost := func() {
		if done.lost() {
			f.sent.release(id)
		}
	}
	topic := f.cfg.batchTopic()
	for i, pl := range payloads {
		if err := p.publish(outbox.Telemetry, 0, topic, pl, onPuback, onLost); err != nil {
			for range len(payloads) - i {
				onLost() // never handed to the client
			}
			return i, err
		}
	}
	f.update(func(s *wire.MQTTStatus) {
		s.Telemetry.Batches += int64(len(payloads))
		s.Telemetry.BatchBytes += int64(bytes)
		s.Telemetry.BatchSamples += int64(samples)
	})
	return len(payloads), nil
}

// thingFill is one thing's part of the batch being filled: what is left
// to read of its wanted intervals, in seq order, and the samples read.
type thingFill struct {
	thing   string
	wanted  []interval
	samples []batch.Sample
	claimed bool
}

// fillShares reads the things' wanted telemetry into fills, at most
// budget records in all, claiming them for batch id, and returns the
// budget left. The budget is shared: each pass gives every thing that may
// have more an equal share of what is left (rounded up), read in seq
// order, so its oldest seqs, resends due included, come first. A thing
// that reads less than its share has nothing more to send; what it left
// goes to the others in the next pass. A pass either finds a thing with
// nothing more or spends the whole budget, so there is at most one pass
// more than there are things; a pass reads a thing's interval from where
// the last pass stopped (docs/telemetry-path.md, "The gateway").
func (p *pump) fillShares(id uint64, fills []*thingFill, budget int) (int, error) {
	more := slices.Clone(fills)
	for budget > 0 && len(more) > 0 {
		share := (budget + len(more) - 1) / len(more)
		next := more[:0:0]
		for _, fl := range more {
			take := min(share, budget)
			if take == 0 {
				break
			}
			n, err := p.readInto(id, fl, take)
			if err != nil {
				return 0, err
			}
			budget -= n
			if n == take {
				next = append(next, fl) // it may have more
			}
		}
		more = next
	}
	return budget, nil
}

// readInto reads up to limit records of fl's wanted intervals, in order,
// one outbox read per interval chunk, into fl's samples, and claims them
// for batch id. It returns how many records it read.
func (p *pump) readInto(id uint64, fl *thingFill, limit int) (int, error) {
	f := p.f
	n := 0
	for len(fl.wanted) > 0 && n < limit {
		iv := fl.wanted[0]
		recs, err := f.src.Telemetry(p.sctx, fl.thing, iv.first, iv.last, limit-n)
		if err != nil {
			return n, p.srcErr(fmt.Errorf("read telemetry of %s: %w", fl.thing, err))
		}
		scanned := iv
		if len(recs) == limit-n && recs[len(recs)-1].Seq != iv.last {
			scanned.last = recs[len(recs)-1].Seq // the rest of iv in the next pass or batch
			fl.wanted[0].first = scanned.last + 1
		} else {
			fl.wanted = fl.wanted[1:]
		}
		samples, seqs := f.samplesOf(fl.thing, recs)
		fl.samples = append(fl.samples, samples...)
		f.sent.claim(id, fl.thing, scanned, seqs)
		fl.claimed = true
		n += len(recs)
	}
	return n, nil
}

// samplesOf converts outbox records to batch samples, the float value
// back to its integer and decimal scale (batch.Scaled: integer milligrams
// in grams come back exactly). A value with no exact decimal form is
// logged and left out; seqs lists the seqs of the samples kept.
func (f *Forwarder) samplesOf(thing string, recs []outbox.Record) (samples []batch.Sample, seqs []uint64) {
	samples = make([]batch.Sample, 0, len(recs))
	seqs = make([]uint64, 0, len(recs))
	for _, r := range recs {
		v, scale, err := scaled(r.Type, r.Value)
		if err != nil {
			// Kept in the outbox, never acknowledged: the disk cap or
			// the TTL reports it in the end.
			f.cfg.Logger.Error("telemetry sample has no exact decimal form; not sent", "thing", thing, "seq", r.Seq, "value", r.Value, "err", err)
			continue
		}
		samples = append(samples, batch.Sample{Seq: r.Seq, At: r.At.UTC(), Kind: r.Type, Value: v, Scale: scale})
		seqs = append(seqs, r.Seq)
	}
	return samples, seqs
}

// sourceScale is the decimal scale a kind has at its source: the agent
// stores the MCU's integer milligrams as grams and its centidegrees as
// degrees (edge/agent/sink.go), so weight_g has 3 decimals and
// temperature_c 2 (docs/telemetry-path.md, "The batch": weight_g has
// scale 3). Every sample of such a kind is sent at that scale, so a
// series' scale and quantum stay the same whatever its values are.
var sourceScale = map[string]uint8{"weight_g": 3, "temperature_c": 2}

// scaled is batch.Scaled, at least at kind's source scale.
func scaled(kind string, f float64) (int64, uint8, error) {
	v, scale, err := batch.Scaled(f)
	if err != nil {
		return 0, 0, err
	}
	for ; scale < sourceScale[kind]; scale++ {
		if v > math.MaxInt64/10 || v < math.MinInt64/10 {
			return 0, 0, fmt.Errorf("%s %v at scale %d: beyond int64", kind, f, sourceScale[kind])
		}
		v *= 10
	}
	return v, scale, nil
}

// batchDone counts one batch's payloads: the batch is sent when every
// payload is PUBACKed, lost (released once) as soon as one is not.
type batchDone struct {
	mu       sync.Mutex
	pending  int
	released bool
}

func (d *batchDone) acked() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending--
	return d.pending == 0 && !d.released
}

func (d *batchDone) lost() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending--
	if d.released {
		return false
	}
	d.released = true
	return true
}

// subscribeAcks subscribes, QoS 1, to the gateway's ack topic; on every
// connection, as paho's client is new each time.
func (f *Forwarder) subscribeAcks(ctx context.Context, client paho.Client) error {
	topic := wire.AckTopic(f.cfg.Tenant, f.cfg.Thing)
	tok := client.Subscribe(topic, 1, f.ackHandler)
	select {
	case <-tok.Done():
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(f.cfg.ConnectTimeout):
		return fmt.Errorf("subscribe %s: no SUBACK within %s", topic, f.cfg.ConnectTimeout)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("subscribe %s: %w", topic, err)
	}
	f.cfg.Logger.Info("subscribed to cloud acks", "topic", topic)
	return nil
}

func (f *Forwarder) ackHandler(_ paho.Client, m paho.Message) {
	// Run's context is not at hand in paho's callback; the outbox bounds
	// the write itself and fails with ErrClosed once it is closed.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := f.ApplyAck(ctx, m.Payload()); err != nil {
		f.cfg.Logger.Warn("cloud ack not applied", "topic", m.Topic(), "err", err)
	}
}

// ApplyAck decodes a cloud acknowledgement (wire.AckMessage) and removes
// what it names from the outbox: only seqs this forwarder has sent, and
// nothing at all when it names another outbox instance. An ack that does
// not decode, or names another outbox, is counted and returned as an
// error; it never stops the forwarder. It returns the records removed.
func (f *Forwarder) ApplyAck(ctx context.Context, payload []byte) (int, error) {
	m, err := wire.DecodeAck(payload)
	if err != nil {
		f.update(func(s *wire.MQTTStatus) { s.Telemetry.AcksBad++ })
		f.cfg.Observer.CloudAck(false, 0)
		return 0, err
	}
	if m.Outbox != f.src.ID() {
		f.update(func(s *wire.MQTTStatus) { s.Telemetry.AcksIgnored++ })
		f.cfg.Observer.CloudAck(false, 0)
		return 0, fmt.Errorf("ack for outbox %q, this gateway's is %q: %w", m.Outbox, f.src.ID(), outbox.ErrOtherOutbox)
	}
	acks := f.sent.acks(m.Things)
	n, err := f.src.AckTelemetry(ctx, m.Outbox, acks)
	if errors.Is(err, outbox.ErrOtherOutbox) {
		f.update(func(s *wire.MQTTStatus) { s.Telemetry.AcksIgnored++ })
		f.cfg.Observer.CloudAck(false, 0)
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("apply ack of outbox %s: %w", m.Outbox, err)
	}
	f.sent.acked(acks)
	now := time.Now()
	f.update(func(s *wire.MQTTStatus) {
		s.Telemetry.AcksApplied++
		s.Telemetry.AckedSamples += int64(n)
		s.Telemetry.LastAck = now
	})
	f.cfg.Observer.CloudAck(true, n)
	f.cfg.Logger.Debug("cloud ack applied", "outbox", m.Outbox, "things", len(m.Things), "removed", n)
	return n, nil
}
