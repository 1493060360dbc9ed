package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Record is one record of the events stream as the event source hands it
// over; the fields are those of cloud/eventsource's Record, so the
// composition root converts one to the other field by field.
type Record struct {
	// Data is record format 2 as the events rule writes it.
	Data []byte
	// PartitionKey is the tenant (the rule's topic(3)).
	PartitionKey   string
	SequenceNumber string
	ShardID        string
	ArrivalTime    time.Time
}

// RecordVersion is the "v" of an events stream record: record format 2,
// as the telemetry stream's (docs/events-path.md).
const RecordVersion = 2

// envelope is a record of format 2 as the events rule writes it. Gateway
// is the topic's fourth level: for an event, the thing.
type envelope struct {
	V          int    `json:"v"`
	Tenant     string `json:"tenant"`
	Gateway    string `json:"gateway"`
	ReceivedAt int64  `json:"received_at"`
	Payload    []byte `json:"payload"` // base64 in JSON
}

// decodeRecord returns the topic the rule received r's message on
// (dt/bowline/<tenant>/<thing>/events), its payload and when the rules
// engine received it.
func decodeRecord(r Record) (topic string, payload []byte, received time.Time, err error) {
	var e envelope
	if err := json.Unmarshal(r.Data, &e); err != nil {
		return "", nil, time.Time{}, fmt.Errorf("record %s: not record format %d: %w", r.SequenceNumber, RecordVersion, err)
	}
	if e.V != RecordVersion {
		return "", nil, time.Time{}, fmt.Errorf("record %s: version %d; want %d", r.SequenceNumber, e.V, RecordVersion)
	}
	if e.ReceivedAt > 0 {
		received = time.UnixMilli(e.ReceivedAt)
	}
	return wire.Topic{Tenant: e.Tenant, Thing: e.Gateway, Kind: wire.KindEvents}.String(), e.Payload, received, nil
}

// recordTopic is the topic a record that is not record format 2 is
// dead-lettered under: never a valid topic, so the letter is a poison pill.
func recordTopic(r Record) string { return "kinesis:" + r.ShardID + ":" + r.SequenceNumber }

// HandleRecords handles one batch of the events stream, all of one
// partition key sub-stream, in sequence order (eventsource.Handler's
// contract): each record's event is emitted once per (thing, id), or
// dead-lettered when rejected, and its seq written to its thing's seq row.
// Records of one thing are handled in order; different things of the batch
// concurrently (at most Config.Concurrency at once), so the engine
// group-commits a tenant's events. It returns "" when every record is
// durable, or the sequence number of the first record that is not (an
// infrastructure failure that outlasted Config.HoldFor, or the end of ctx):
// the event source hands that record and every later one over again, and
// the ones already emitted are found as duplicates.
func (in *Ingester) HandleRecords(ctx context.Context, recs []Record) (failedFrom string, err error) {
	type item struct {
		idx   int
		topic string
		raw   []byte
		recv  time.Time
	}
	groups := map[string][]item{}
	var order []string
	for i, r := range recs {
		topic, raw, recv, err := decodeRecord(r)
		if err != nil {
			// Nothing the rules wrote: keep the bytes as a poison pill.
			in.log.Error("events record is not record format 2; dead-lettered", "seq", r.SequenceNumber, "err", err)
			topic, raw = recordTopic(r), r.Data
		}
		if _, ok := groups[topic]; !ok {
			order = append(order, topic)
		}
		groups[topic] = append(groups[topic], item{i, topic, raw, recv})
	}
	var (
		failed = atomic.Int64{}
		acked  = make([]chan struct{}, len(recs))
		wg     sync.WaitGroup
		sem    = make(chan struct{}, in.cfg.Concurrency)
	)
	failed.Store(int64(len(recs)))
	fail := func(i int) {
		for {
			cur := failed.Load()
			if int64(i) >= cur || failed.CompareAndSwap(cur, int64(i)) {
				return
			}
		}
	}
	for _, topic := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func(items []item) {
			defer wg.Done()
			defer func() { <-sem }()
			for _, it := range items {
				if int64(it.idx) > failed.Load() {
					return // the source hands it over again anyway
				}
				done := make(chan struct{})
				rctx, cancel := context.WithTimeout(ctx, in.cfg.HoldFor)
				err := in.Handle(rctx, it.topic, it.raw, it.recv, func() { close(done) })
				cancel()
				if err != nil {
					in.log.Warn("event not durable; the event source hands it over again", "topic", it.topic, "seq", recs[it.idx].SequenceNumber, "err", err)
					fail(it.idx)
					return
				}
				acked[it.idx] = done
			}
		}(groups[topic])
	}
	wg.Wait()
	// The seq rows: a record is done once its seq is written too, so a
	// restart never raises a false gap for an event it handled.
	for i, done := range acked {
		if done == nil || int64(i) >= failed.Load() {
			continue
		}
		if !in.waitAck(ctx, done) {
			fail(i)
			break
		}
	}
	if in.cfg.Now().Sub(in.checked.Load()) >= in.cfg.GapFlushInterval {
		in.checkGaps(ctx)
	}
	if f := failed.Load(); f < int64(len(recs)) {
		return recs[f].SequenceNumber, nil
	}
	return "", nil
}

// waitAck writes seq rows until done is closed, or reports false when ctx
// ends first.
func (in *Ingester) waitAck(ctx context.Context, done chan struct{}) bool {
	for {
		select {
		case <-done:
			return true
		default:
		}
		if err := in.FlushSeqs(ctx); err != nil {
			in.log.Warn("seq rows not written; retrying", "err", err)
		}
		select {
		case <-done:
			return true
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// atomicTime is a time.Time safe for concurrent use.
type atomicTime struct{ ns atomic.Int64 }

func (a *atomicTime) Store(t time.Time) { a.ns.Store(t.UnixNano()) }
func (a *atomicTime) Load() time.Time   { return time.Unix(0, a.ns.Load()) }
