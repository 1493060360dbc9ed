package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine/deadletter"
)

// Ingester is the events consumer: build it with New, hand it the events
// stream's batches with HandleRecords (behind the event source), and run
// its gap check with Run.
type Ingester struct {
	cfg      Config
	log      *slog.Logger
	db       DynamoAPI
	emitter  Emitter
	registry *devices.Registry
	devices  *devices.Cache // the registry, cached (unknown things too)
	letters  LetterStore
	gaps     *gapTracker
	// limiter and heldLetters bound what rejections cost (reject.go).
	limiter     *deadletter.Budget
	quarantine  *deadletter.Budget // unknown_thing rejections (reject.go)
	heldLetters chan struct{}
	// checked is when the gaps were last checked (UnixNano), so batches
	// check at most every GapFlushInterval.
	checked atomicTime
}

// New fills cfg's defaults, validates it and builds an Ingester.
func New(cfg Config) (*Ingester, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	in := &Ingester{cfg: cfg, log: cfg.Logger.With("component", "ingest"), db: cfg.DynamoDB, emitter: cfg.Emitter,
		limiter: newRejectLimiter(cfg.Rejections), quarantine: newQuarantine(cfg.Rejections), heldLetters: make(chan struct{}, cfg.Rejections.MaxHeld)}
	var err error
	if in.registry, err = devices.New(in.db, cfg.Names.AppTable(), cfg.Now); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if in.devices, err = devices.NewCache(in.registry, devices.CacheConfig{TTL: cfg.RegistryTTL, UnknownTTL: cfg.Rejections.UnknownTTL,
		MaxEntries: cfg.Rejections.CacheSize, Now: cfg.Now}); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if in.letters, err = deadletter.New(in.db, cfg.Names.DeadLettersTable(), cfg.Now); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	in.gaps = newGapTracker(in.db, cfg.Names.AppTable(), cfg.GapGrace, cfg.GapMaxSpans, cfg.Now, in.log, in.raiseGap)
	return in, nil
}

// Config returns the validated configuration, defaults filled in.
func (in *Ingester) Config() Config { return in.cfg }

// Run checks for gaps that fell due every GapFlushInterval until ctx ends,
// so a hole is raised even while no batch arrives. HandleRecords checks
// too; Run is for a process that lives between batches (`bowline ingest`
// locally). It returns nil when ctx ends.
func (in *Ingester) Run(ctx context.Context) error {
	t := time.NewTicker(in.cfg.GapFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			in.checkGaps(ctx)
		}
	}
}

// checkGaps raises the gaps that are due; a failure is logged and tried
// again at the next check.
func (in *Ingester) checkGaps(ctx context.Context) {
	in.checked.Store(in.cfg.Now())
	if err := in.gaps.Check(ctx); err != nil && ctx.Err() == nil {
		in.log.Warn("gap check failed; will retry", "err", err)
	}
}

// message is one event message on its way through Handle: what arrived,
// and what is known of it so far.
type message struct {
	topic string
	raw   []byte
	recv  time.Time
	// clockRef is what a gateway clock is judged against (Config.ReceiveClock,
	// else when the rules engine received the message).
	clockRef time.Time
	ack      func()
	// kind is the topic's kind; "unknown" until the topic parsed.
	kind string
	// tp is the parsed topic; zero until it parsed.
	tp wire.Topic
	// verified: tp.Tenant is the thing's tenant in the device registry.
	verified bool
	// typ is the event type once the payload decoded; "" before.
	typ string
}

// Handle processes one message published on topic and received by the
// rules engine at received (the zero time: now). It returns nil once the
// event is durable: emitted (or found emitted before), or rejected and
// dead-lettered. ack is called at most once, after that and after the
// event's seq is written to its thing's seq row; the caller must run
// FlushSeqs (HandleRecords does) for that to happen. When Handle returns
// an error, the message is neither emitted nor dead-lettered and must be
// handed over again.
func (in *Ingester) Handle(ctx context.Context, topic string, raw []byte, received time.Time, ack func()) error {
	if received.IsZero() {
		received = in.cfg.Now()
	}
	ref := received
	if in.cfg.ReceiveClock != nil {
		ref = in.cfg.ReceiveClock()
	}
	m := message{topic: topic, raw: raw, recv: in.cfg.Now(), clockRef: ref, ack: ack, kind: "unknown"}
	tp, err := ParseTopic(topic)
	if err != nil {
		in.cfg.Observer.Received(m.kind)
		return in.rejected(ctx, m, err)
	}
	m.tp, m.kind = tp, tp.Kind
	in.cfg.Observer.Received(m.kind)
	if err := in.verifyTenant(ctx, tp); err != nil {
		return in.rejected(ctx, m, err)
	}
	m.verified = true
	return in.handleEvent(ctx, m)
}

// FlushSeqs writes the seq rows of every event handled so far and calls
// their acks. It returns when nothing is pending, or with the error of a
// round that failed (what it held stays pending).
func (in *Ingester) FlushSeqs(ctx context.Context) error { return in.gaps.drain(ctx) }

// verifyTenant checks that tp's thing is registered to tp's tenant. It
// returns a *Rejection for an unknown thing or a mismatch, and retries
// transient registry errors until ctx ends. Answers, "unknown" included,
// are cached (RegistryTTL, Rejections.UnknownTTL).
func (in *Ingester) verifyTenant(ctx context.Context, tp wire.Topic) error {
	var d devices.Device
	err := in.retry(ctx, "registry", "look up device "+tp.Thing, func() error {
		var err error
		d, err = in.devices.Lookup(ctx, tp.Thing)
		if errors.Is(err, devices.ErrUnknownDevice) {
			return permanent{err}
		}
		return err
	})
	if errors.Is(err, devices.ErrUnknownDevice) {
		return reject(ReasonUnknownThing, "thing %q is not in the device registry", tp.Thing)
	}
	if err != nil {
		return err
	}
	if d.Tenant != tp.Tenant {
		return reject(ReasonTenantMismatch, "thing %q belongs to another tenant, not %q", tp.Thing, tp.Tenant)
	}
	return nil
}

func (in *Ingester) handleEvent(ctx context.Context, m message) error {
	tp := m.tp
	ev, fix, err := decodeEvent(m.raw, tp.Thing, m.clockRef, in.cfg.limits())
	m.typ = ev.Type
	if err == nil {
		err = fix.correctEvent(&ev)
	}
	if err != nil {
		return in.rejected(ctx, m, err)
	}
	in.clockFixed(tp, fix)
	var outcome emitOutcome
	err = in.retry(ctx, "emit", "emit "+ev.Type+" "+ev.ID+" of "+tp.Thing, func() error {
		var err error
		outcome, err = in.emitEvent(ctx, tp.Tenant, ev, fix, m.raw)
		if errors.Is(err, ErrRejected) {
			return permanent{err}
		}
		return err
	})
	if errors.Is(err, ErrRejected) {
		return in.rejected(ctx, m, err)
	}
	if err != nil {
		return err
	}
	if outcome == duplicate {
		in.cfg.Observer.Duplicate(ev.Type)
	} else {
		in.cfg.Observer.Emitted(ev.Type)
	}
	in.gaps.Record(func() {
		in.cfg.Observer.Acked(Ack{Kind: tp.Kind, Tenant: tp.Tenant, Thing: tp.Thing, Seq: ev.Seq, SinceReceipt: in.cfg.Now().Sub(m.recv), ClockFix: fix.Reason, ClockSkew: fix.Skew})
		if m.ack != nil {
			m.ack()
		}
	}, observation{laneKey{tp.Tenant, tp.Thing, LaneEvents}, ev.Seq, ev.Seq, ev.At})
	return nil
}

// rejectedSeqs returns the seq a rejected event names, read leniently from
// its payload ("seq"), when its topic's tenant is verified; nothing
// otherwise.
func rejectedSeqs(m message) []observation {
	if !m.verified {
		return nil
	}
	var p struct {
		Seq uint64 `json:"seq"`
	}
	if json.Unmarshal(m.raw, &p) != nil || p.Seq == 0 {
		return nil
	}
	return []observation{{key: laneKey{m.tp.Tenant, m.tp.Thing, LaneEvents}, from: p.Seq, to: p.Seq}}
}
