package durable

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine/deadletter"
)

// Consumer reads the telemetry stream: it is the logic behind the Lambda
// Kinesis event source (and `bowline consume` locally). It is safe for
// concurrent use: calls of Handle for several shards run at once, each
// gateway's state and each bowl's rollup under its own lock, so a slow
// call holds up only its own gateway.
type Consumer struct {
	cfg     Config
	log     *slog.Logger
	obs     Observer
	codec   batchCodec
	letters LetterStore
	limiter *deadletter.Budget

	// id names this process in rollup write tokens; writes counts them.
	id     string
	writes atomic.Uint64

	// mu guards the caches and the dropped lists, never across I/O.
	mu    sync.Mutex
	gws   *lru[*gwState]
	bowls *lru[*bowlRollup]
	// dropped are evicted entries, written (when they hold anything
	// unwritten) at the end of the next call.
	droppedGWs   []*gwState
	droppedBowls []*bowlRollup
}

// New fills cfg's defaults, validates it and returns a Consumer.
func New(cfg Config) (*Consumer, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Consumer{cfg: cfg, id: processID(), log: cfg.Logger, obs: cfg.Observer, codec: defaultCodec, letters: cfg.Letters, limiter: newRejectLimiter(cfg.Rejections)}
	c.gws = newLRU(cfg.MaxGateways, func(s *gwState) { c.droppedGWs = append(c.droppedGWs, s) })
	c.bowls = newLRU(cfg.MaxBowls, func(b *bowlRollup) {
		b.evicted.Store(true)
		c.droppedBowls = append(c.droppedBowls, b)
	})
	return c, nil
}

// Handle takes in one batch of records of one shard, in order. A record
// that cannot be taken in for good (it does not decode, or names a thing
// the gateway may not speak for) is dead-lettered and counts as done. An
// infrastructure failure on a record (the registry, the state row's first
// read, a dead letter write) stops there: Result names that record and
// the event source retries from it; the records before it are done.
//
// At the end of the call it publishes the acknowledgements that fell due,
// raises the gaps past their grace, writes the state rows of the gateways
// where something mattered and the rollups that are due. Their failures
// are logged and counted and tried again at the next call: the records
// are in the stream, so nothing is lost meanwhile.
//
// The error is non-nil only when ctx ended before any record was taken
// in: retry the whole batch.
func (c *Consumer) Handle(ctx context.Context, recs []Record) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("handle %d records: %w", len(recs), err)
	}
	var (
		res     = Result{BatchItemFailures: []BatchItemFailure{}}
		touched []*gwState
		bowls   []*bowlRollup
	)
	for _, r := range recs {
		st, bs, err := c.take(ctx, r)
		if err != nil {
			c.warnUnlessStopping(ctx, "record not taken in: the event source retries from it", "record", r.describe(), "err", err)
			res.BatchItemFailures = []BatchItemFailure{{ItemIdentifier: r.SequenceNumber}}
			break
		}
		if st != nil && !slices.Contains(touched, st) {
			touched = append(touched, st)
		}
		for _, b := range bs {
			if !slices.Contains(bowls, b) {
				bowls = append(bowls, b)
			}
		}
	}
	c.finish(ctx, touched, bowls, false)
	return res, nil
}

// Flush does the end-of-call work for everything this process holds,
// rollups of windows still open included: call it on shutdown. (Each call
// writes the open windows' minutes so far as a row of their own: on a
// timer, use FlushDue.)
func (c *Consumer) Flush(ctx context.Context) { c.flush(ctx, true) }

// FlushDue does the end-of-call work that is due for everything this
// process holds: acknowledgements, gaps, state rows, and the rollups of
// windows that have closed. Call it on a timer, so that a quiet gateway's
// due ack does not wait for its next record (FlushEvery).
func (c *Consumer) FlushDue(ctx context.Context) { c.flush(ctx, false) }

func (c *Consumer) flush(ctx context.Context, all bool) {
	var (
		gws   []*gwState
		bowls []*bowlRollup
	)
	c.mu.Lock()
	c.gws.each(func(s *gwState) { gws = append(gws, s) })
	c.bowls.each(func(b *bowlRollup) { bowls = append(bowls, b) })
	c.mu.Unlock()
	c.finish(ctx, gws, bowls, all)
}

// take takes in one record. Its error is an infrastructure failure:
// retry the record. It returns the gateway state and the bowls it touched.
func (c *Consumer) take(ctx context.Context, r Record) (*gwState, []*bowlRollup, error) {
	e, err := decodeEnvelope(r.Data)
	if err != nil {
		c.obs.Record("unknown")
		return nil, nil, c.refuse(ctx, r, envelope{}, err)
	}
	d, err := c.decodePayload(e)
	if err != nil {
		c.obs.Record("unknown")
		return nil, nil, c.refuse(ctx, r, e, err)
	}
	c.obs.Record(d.format)
	if err := c.checkIdentity(ctx, d); err != nil {
		return nil, nil, c.refuse(ctx, r, e, err)
	}
	if len(d.series) == 0 {
		return nil, nil, nil // a batch of no things: nothing to take in
	}
	st, err := c.gateway(ctx, d.tenant, d.gateway)
	if err != nil {
		return nil, nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	fix := judgeClock(d.sentAt, d.receivedAt, c.cfg.MaxAhead)
	if fix.Reason != "" {
		c.obs.ClockFixed(fix.Reason)
		c.log.Debug("gateway clock wrong; sample times corrected from sent_at", "tenant", d.tenant, "gateway", d.gateway, "fix", fix.Reason, "skew", fix.Skew)
	}
	now := d.gatewayNow(fix)
	ob := st.outbox(d.outbox)
	ob.step(now, c.cfg.GapStep)
	var fresh, dups int
	var bowls []*bowlRollup
	for _, s := range d.series {
		t := ob.thing(s.thing)
		before := t.spans.holes()
		var b *bowlRollup
		for _, x := range s.samples {
			if b == nil {
				b = c.bowl(s.thing)
				bowls = append(bowls, b)
			}
			dup := t.spans.contains(x.seq)
			at := fix.correct(x.at)
			b.mu.Lock()
			b.note(at, d.outbox, x.seq, dup, c.window(), c.cfg.Now())
			if !dup {
				b.add(at, x.kind, x.value, c.window(), c.cfg.Now())
			}
			b.mu.Unlock()
			if dup {
				dups++
				continue
			}
			fresh++
			t.spans = t.spans.add(x.seq, x.seq)
		}
		if t.tidy(before) {
			st.dirty = true // a hole opened or closed
		}
		t.notice(now, ob.clock)
	}
	if fresh > 0 {
		ob.fresh, st.unstored = true, true
	}
	st.bound(&c.cfg)
	c.obs.Samples(fresh)
	c.obs.Duplicates(dups)
	return st, bowls, nil
}

// refuse dead-letters a rejection; any other error is returned.
func (c *Consumer) refuse(ctx context.Context, r Record, e envelope, err error) error {
	var rej *Rejection
	if !errors.As(err, &rej) {
		return err
	}
	return c.rejected(ctx, r, e, rej)
}

// checkIdentity holds every thing of d to the envelope's gateway and
// tenant: its name is the gateway's or "<gateway>:*", and the registry
// has it under the tenant. One thing that fails rejects the record whole.
func (c *Consumer) checkIdentity(ctx context.Context, d decoded) error {
	var things []string
	for _, s := range d.series {
		if err := wire.CheckName("thing", s.thing); err != nil {
			return reject(ReasonMalformed, "%v", err)
		}
		if !ownedBy(s.thing, d.gateway) {
			return reject(ReasonForeignThing, "thing %q is not gateway %q's (want %q or %q)", s.thing, d.gateway, d.gateway, d.gateway+string(wire.ThingSeparator)+"*")
		}
		for _, x := range s.samples {
			if err := wire.CheckKind("kind", x.kind); err != nil {
				return reject(ReasonMalformed, "thing %q seq %d: %v", s.thing, x.seq, err)
			}
		}
		if !slices.Contains(things, s.thing) {
			things = append(things, s.thing)
		}
	}
	for _, thing := range things {
		cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
		dev, err := c.cfg.Devices.Lookup(cctx, thing)
		cancel()
		switch {
		case errors.Is(err, devices.ErrUnknownDevice):
			return reject(ReasonUnknownThing, "thing %q is not registered", thing)
		case err != nil:
			return fmt.Errorf("look up thing %q of gateway %s/%s: %w", thing, d.tenant, d.gateway, err)
		case dev.Tenant != d.tenant:
			return reject(ReasonOtherTenant, "thing %q is registered to another tenant than %q", thing, d.tenant)
		}
	}
	return nil
}

// gateway returns gw's state, from the cache or its row (read without
// holding the cache's lock; when two calls race, the first cached wins).
func (c *Consumer) gateway(ctx context.Context, tenant, gw string) (*gwState, error) {
	key := tenant + "/" + gw
	c.mu.Lock()
	s, ok := c.gws.get(key)
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := c.loadState(ctx, tenant, gw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.gws.get(key); ok {
		return cur, nil
	}
	c.gws.put(key, s)
	return s, nil
}

// finish does the work of the end of a call for the gateways and bowls
// given, and for those evicted meanwhile.
func (c *Consumer) finish(ctx context.Context, gws []*gwState, bowls []*bowlRollup, force bool) {
	c.mu.Lock()
	gws = append(gws, c.droppedGWs...)
	bowls = append(bowls, c.droppedBowls...)
	c.droppedGWs, c.droppedBowls = nil, nil
	c.mu.Unlock()
	now := c.cfg.Now()
	// Each gateway and each bowl is finished under its own lock and
	// writes its own row: up to finishWorkers at once, so a call of 100
	// records does not wait for some 250 calls (acks, state and rollup
	// rows) one after another (docs/telemetry-path.md, "Fleet bench").
	work := make(chan func())
	var wg sync.WaitGroup
	for range min(finishWorkers, len(gws)+len(bowls)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				f()
			}
		}()
	}
	for _, s := range gws {
		work <- func() { c.finishGateway(ctx, s, now) }
	}
	for _, b := range bowls {
		work <- func() { c.finishBowl(ctx, b, now, force) }
	}
	close(work)
	wg.Wait()
}

// finishWorkers bounds the gateways and bowls finish works on at once.
const finishWorkers = 8

func (c *Consumer) finishGateway(ctx context.Context, s *gwState, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.raiseGaps(ctx, s)
	c.ackIfDue(ctx, s, now) // writes the row first when an ack is due
	if !s.dirty {
		return
	}
	if err := c.saveState(ctx, s); err != nil {
		c.warnUnlessStopping(ctx, "gateway state not written; tried again at the next call", "tenant", s.tenant, "gateway", s.gw, "err", err)
	}
}

func (c *Consumer) finishBowl(ctx context.Context, b *bowlRollup, now time.Time, force bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	all := force || b.evicted.Load() || c.cfg.RollupEvery == 0
	if !b.pending() || (!all && !c.due(b, now)) {
		return
	}
	if err := c.writeRollup(ctx, b, now, all); err != nil {
		c.warnUnlessStopping(ctx, "rollup not written; kept in memory and tried again", "thing", b.thing, "err", err)
	}
}

// processID is a random name for this process.
func processID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// FlushEvery calls FlushDue every d (at least a second) until ctx ends, so a
// quiet gateway's due ack does not wait for its next record. A process
// that runs the consumer outside Lambda runs it beside the event source;
// in Lambda, Handle's own end-of-call work is all there is.
func (c *Consumer) FlushEvery(ctx context.Context, d time.Duration) {
	t := time.NewTicker(max(d, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.FlushDue(ctx)
		}
	}
}

// warnUnlessStopping logs a failed write at warning level, or at debug
// level when ctx has ended: a write cut short by the process stopping is
// tried again by the next run (the event source resends what was not
// checkpointed), so it is no news, and at fleet scale one such line per
// gateway and bowl would bury the stop in warnings.
func (c *Consumer) warnUnlessStopping(ctx context.Context, msg string, args ...any) {
	level := slog.LevelWarn
	if ctx.Err() != nil {
		level = slog.LevelDebug
	}
	c.log.Log(ctx, level, msg, args...)
}
