package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine/deadletter"
)

// Ingester is one ingest process: build it with New, run it with Run.
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

	// work is the context of message handling; it ends DrainTimeout after
	// shutdown starts.
	work     context.Context
	abandon  context.CancelFunc
	gate     sync.RWMutex // held for reading while a handler starts
	draining bool
	// unsubscribed: the drain started; a reconnection must not subscribe.
	unsubscribed bool
	handlers     sync.WaitGroup
	ran          bool
	runningMu    sync.Mutex
	ready        chan struct{}
	readyOnce    sync.Once
	// lease is this process's client-id slot; nil with a fixed ClientID.
	lease *slotLease
}

// New validates cfg and builds an Ingester and its clients. Nothing connects
// until Run.
func New(cfg Config) (*Ingester, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	in := &Ingester{cfg: cfg, log: cfg.Logger.With("component", "ingest"), db: cfg.DynamoDB, emitter: cfg.Emitter, ready: make(chan struct{}),
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

// Ready is closed once Run has subscribed for the first time: from then on
// the broker holds every matching message for this ingest group.
func (in *Ingester) Ready() <-chan struct{} { return in.ready }

// Config returns the validated configuration, defaults filled in.
func (in *Ingester) Config() Config { return in.cfg }

// Run leases a client-id slot (unless Config.ClientID fixes the id),
// connects to the broker, subscribes and ingests until ctx ends; then it
// unsubscribes, drains (see Config.DrainTimeout), disconnects, releases the
// slot and returns nil. It returns an error when it cannot start, and
// ErrLeaseLost (after disconnecting at once) when its slot was taken or
// could not be renewed. Run may be called once.
func (in *Ingester) Run(ctx context.Context) error {
	in.runningMu.Lock()
	if in.ran {
		in.runningMu.Unlock()
		return errors.New("ingest: Run called twice")
	}
	in.ran = true
	in.runningMu.Unlock()

	in.work, in.abandon = context.WithCancel(context.Background())
	defer in.abandon()

	clientID := in.cfg.ClientID
	if clientID == "" {
		// The lease runs on the wall clock: its expiry is compared across
		// processes, whatever Config.Now simulates.
		in.lease = &slotLease{db: in.db, table: in.cfg.Names.AppTable(), group: in.cfg.Group, owner: in.cfg.Owner,
			slots: in.cfg.Slots, ttl: in.cfg.LeaseTTL, now: time.Now, log: in.log}
		if err := in.lease.acquire(ctx); err != nil {
			if ctx.Err() != nil {
				in.log.Info("ingest stopped before a slot was free")
				return nil
			}
			return err
		}
		clientID = slotClientID(in.cfg.Group, in.lease.slot)
		in.log.Info("ingest slot leased", "group", in.cfg.Group, "slot", in.lease.slot, "client_id", clientID, "owner", in.cfg.Owner)
	}

	var loops sync.WaitGroup
	loopsCtx, stopLoops := context.WithCancel(in.work)
	loops.Add(2)
	go func() {
		defer loops.Done()
		in.gapLoop(loopsCtx)
	}()
	go func() {
		defer loops.Done()
		in.gaps.writeLoop(loopsCtx)
	}()
	stop := func() {
		stopLoops()
		loops.Wait()
	}

	client, err := in.connect(ctx, clientID)
	if err != nil {
		stop()
		in.releaseLease()
		return err
	}
	lost := make(chan error, 1)
	keepCtx, stopKeep := context.WithCancel(context.Background())
	defer stopKeep()
	if in.lease != nil {
		go func() {
			if err := in.lease.keep(keepCtx); err != nil {
				lost <- err
			}
		}()
	}
	select {
	case <-ctx.Done():
	case err := <-lost:
		// Another process may own the slot's session by now: stop at once
		// and never reconnect. What is unacknowledged stays in the session
		// for the slot's next owner.
		in.log.Error("ingest slot lease lost: disconnecting without draining", "client_id", clientID, "err", err)
		in.gate.Lock()
		in.draining, in.unsubscribed = true, true
		in.gate.Unlock()
		client.Disconnect(0)
		in.abandon()
		in.handlers.Wait()
		stop()
		return err
	}
	in.log.Info("ingest stopping: unsubscribing, then draining messages in progress", "timeout", in.cfg.DrainTimeout)

	// Drain: unsubscribe first so the broker routes nothing new to this
	// session, then give messages in progress DrainTimeout to become
	// durable and be acknowledged. Whatever stays unacknowledged remains in
	// the session, which the slot's next owner (or this fixed client id)
	// resumes.
	drainCtx, cancel := context.WithTimeout(context.Background(), in.cfg.DrainTimeout)
	defer cancel()
	stopAbandon := context.AfterFunc(drainCtx, in.abandon)
	defer stopAbandon()
	in.gate.Lock()
	in.unsubscribed = true
	in.gate.Unlock()
	if tok := client.Unsubscribe(Filters(in.cfg.Group)...); !tok.WaitTimeout(in.cfg.DrainTimeout/2) || tok.Error() != nil {
		in.log.Warn("unsubscribe not confirmed; draining anyway", "err", tok.Error())
	}
	in.gate.Lock()
	in.draining = true
	in.gate.Unlock()
	in.handlers.Wait()
	stop()
	if err := in.gaps.drain(drainCtx); err != nil {
		in.log.Warn("seq rows not written before the drain timeout; their messages were not acknowledged", "err", err)
	}
	client.Disconnect(250)
	stopKeep()
	in.releaseLease()
	in.log.Info("ingest stopped")
	return nil
}

// releaseLease gives up the slot, if any, so a successor need not wait for
// its TTL.
func (in *Ingester) releaseLease() {
	if in.lease == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := in.lease.release(ctx); err != nil {
		in.log.Warn("ingest slot lease not released; it expires on its own", "err", err)
	}
}

func (in *Ingester) gapLoop(ctx context.Context) {
	t := time.NewTicker(in.cfg.GapFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := in.gaps.Check(ctx); err != nil && ctx.Err() == nil {
				in.log.Warn("gap check failed; will retry", "err", err)
			}
		}
	}
}

// begin registers a handler unless the ingester is draining.
func (in *Ingester) begin() bool {
	in.gate.RLock()
	defer in.gate.RUnlock()
	if in.draining || (in.lease != nil && !in.lease.active()) {
		return false
	}
	in.handlers.Add(1)
	return true
}

// message is one MQTT message on its way through Handle: what arrived, and
// what is known of it so far.
type message struct {
	topic string
	raw   []byte
	recv  time.Time
	// clockRef is what a gateway clock is judged against (Config.ReceiveClock).
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

// Handle processes one message from topic. ack sends its PUBACK and is called
// at most once: after the data and its seqs are durable (the seq row is
// written first, gaps.go), or after a rejection is dead-lettered. When
// Handle returns an error, the message was neither and stays
// unacknowledged (the broker redelivers it on reconnect). A message may be
// acknowledged after Handle returns, from another goroutine, and only while
// Run is running (it writes the seq rows).
func (in *Ingester) Handle(ctx context.Context, topic string, raw []byte, ack func()) error {
	m := message{topic: topic, raw: raw, recv: in.cfg.Now(), clockRef: in.cfg.ReceiveClock(), ack: ack, kind: "unknown"}
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
		m.ack()
	}, observation{laneKey{tp.Tenant, tp.Thing, LaneEvents}, ev.Seq, ev.Seq})
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
	return []observation{{laneKey{m.tp.Tenant, m.tp.Thing, LaneEvents}, p.Seq, p.Seq}}
}
