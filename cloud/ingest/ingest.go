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
	"github.com/bowline-iot/bowline/cloud/telemetry"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine/deadletter"
)

// Ingester is one ingest process: build it with New, run it with Run.
type Ingester struct {
	cfg      Config
	log      *slog.Logger
	db       DynamoAPI
	kin      telemetry.KinesisAPI
	emitter  Emitter
	registry *devices.Registry
	letters  LetterStore
	gaps     *gapTracker

	cacheMu sync.Mutex
	cache   map[string]cachedDevice

	// work is the context of message handling; it ends DrainTimeout after
	// shutdown starts.
	work      context.Context
	abandon   context.CancelFunc
	gate      sync.RWMutex // held for reading while a handler starts
	draining  bool
	handlers  sync.WaitGroup
	producer  *telemetry.Producer
	ran       bool
	runningMu sync.Mutex
	ready     chan struct{}
	readyOnce sync.Once
}

type cachedDevice struct {
	tenant  string
	expires time.Time
}

// New validates cfg and builds an Ingester and its clients. Nothing connects
// until Run.
func New(cfg Config) (*Ingester, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	in := &Ingester{cfg: cfg, log: cfg.Logger.With("component", "ingest"), db: cfg.DynamoDB, kin: cfg.Kinesis, emitter: cfg.Emitter, cache: make(map[string]cachedDevice), ready: make(chan struct{})}
	var err error
	if in.registry, err = devices.New(in.db, cfg.Names.AppTable(), cfg.Now); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if in.letters, err = deadletter.New(in.db, cfg.Names.DeadLettersTable(), cfg.Now); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	in.gaps = newGapTracker(in.db, cfg.Names.AppTable(), cfg.GapGrace, cfg.Now, in.log, in.raiseGap)
	return in, nil
}

// Ready is closed once Run has subscribed for the first time: from then on
// the broker holds every matching message for this ingest group.
func (in *Ingester) Ready() <-chan struct{} { return in.ready }

// Config returns the validated configuration, defaults filled in.
func (in *Ingester) Config() Config { return in.cfg }

// Run connects to the broker, subscribes and ingests until ctx ends; then it
// drains gracefully (see Config.DrainTimeout), disconnects and returns nil.
// It returns an error when it cannot start. Run may be called once.
func (in *Ingester) Run(ctx context.Context) error {
	in.runningMu.Lock()
	if in.ran {
		in.runningMu.Unlock()
		return errors.New("ingest: Run called twice")
	}
	in.ran = true
	in.runningMu.Unlock()

	pcfg := in.cfg.Producer
	if pcfg.Observer == nil {
		if po, ok := in.cfg.Observer.(telemetry.ProducerObserver); ok {
			pcfg.Observer = po
		}
	}
	p, err := telemetry.NewProducer(in.kin, pcfg)
	if err != nil {
		return err
	}
	in.producer = p
	in.work, in.abandon = context.WithCancel(context.Background())
	defer in.abandon()

	gapsDone := make(chan struct{})
	gapsCtx, stopGaps := context.WithCancel(in.work)
	go func() {
		defer close(gapsDone)
		in.gapLoop(gapsCtx)
	}()

	client, err := in.connect(ctx)
	if err != nil {
		stopGaps()
		<-gapsDone
		_ = p.Close(context.Background())
		return err
	}
	<-ctx.Done()
	in.log.Info("ingest stopping: draining messages in progress", "timeout", in.cfg.DrainTimeout)

	// Drain: no new messages; those in progress get DrainTimeout to become
	// durable and be acknowledged. Unacknowledged ones stay in the broker
	// session and are redelivered when this client id reconnects.
	in.gate.Lock()
	in.draining = true
	in.gate.Unlock()
	drainCtx, cancel := context.WithTimeout(context.Background(), in.cfg.DrainTimeout)
	defer cancel()
	stopAbandon := context.AfterFunc(drainCtx, in.abandon)
	defer stopAbandon()
	in.handlers.Wait()
	if err := p.Close(drainCtx); err != nil {
		in.log.Warn("kinesis records not accepted before the drain timeout; their messages were not acknowledged", "err", err)
	}
	client.Disconnect(250)
	stopGaps()
	<-gapsDone
	if err := in.gaps.Flush(drainCtx); err != nil {
		in.log.Warn("final seq flush failed", "err", err)
	}
	in.log.Info("ingest stopped")
	return nil
}

func (in *Ingester) gapLoop(ctx context.Context) {
	t := time.NewTicker(in.cfg.GapFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := in.gaps.Flush(ctx); err != nil && ctx.Err() == nil {
				in.log.Warn("seq tracking flush failed; will retry", "err", err)
			}
		}
	}
}

// begin registers a handler unless the ingester is draining.
func (in *Ingester) begin() bool {
	in.gate.RLock()
	defer in.gate.RUnlock()
	if in.draining {
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
	ack   func()
	// kind is the topic's kind; "unknown" until the topic parsed.
	kind string
	// tp is the parsed topic; zero until it parsed.
	tp wire.Topic
	// verified: tp.Tenant is the thing's tenant in the device registry.
	verified bool
	// typ is the event type once the payload decoded; "" before, and for
	// telemetry.
	typ string
}

// Handle processes one message from topic. ack sends its PUBACK and is called
// at most once: after the data is durable, or after a rejection is
// dead-lettered. When Handle returns an error, the message was neither and
// stays unacknowledged (the broker redelivers it on reconnect). Telemetry
// may be acknowledged after Handle returns, from another goroutine.
func (in *Ingester) Handle(ctx context.Context, topic string, raw []byte, ack func()) error {
	m := message{topic: topic, raw: raw, recv: in.cfg.Now(), ack: ack, kind: "unknown"}
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
	switch tp.Kind {
	case wire.KindTelemetry:
		return in.handleTelemetry(ctx, m)
	default:
		return in.handleEvent(ctx, m)
	}
}

// verifyTenant checks that tp's thing is registered to tp's tenant. It
// returns a *Rejection for an unknown thing or a mismatch, and retries
// transient registry errors until ctx ends.
func (in *Ingester) verifyTenant(ctx context.Context, tp wire.Topic) error {
	now := in.cfg.Now()
	in.cacheMu.Lock()
	c, ok := in.cache[tp.Thing]
	in.cacheMu.Unlock()
	if !ok || now.After(c.expires) {
		var d devices.Device
		err := in.retry(ctx, "look up device "+tp.Thing, func() error {
			var err error
			d, err = in.registry.Lookup(ctx, tp.Thing)
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
		c = cachedDevice{tenant: d.Tenant, expires: now.Add(in.cfg.RegistryTTL)}
		in.cacheMu.Lock()
		in.cache[tp.Thing] = c
		in.cacheMu.Unlock()
	}
	if c.tenant != tp.Tenant {
		return reject(ReasonTenantMismatch, "thing %q belongs to another tenant, not %q", tp.Thing, tp.Tenant)
	}
	return nil
}

// telemetryRecord is the Kinesis record of one telemetry message: sample i
// has seq Seq+i.
type telemetryRecord struct {
	V          int           `json:"v"`
	Tenant     string        `json:"tenant"`
	Thing      string        `json:"thing"`
	Seq        uint64        `json:"seq"`
	LastSeq    uint64        `json:"last_seq"`
	ReceivedAt time.Time     `json:"received_at"`
	Samples    []wire.Sample `json:"samples"`
}

func (in *Ingester) handleTelemetry(ctx context.Context, m message) error {
	tp := m.tp
	t, err := DecodeTelemetry(m.raw, tp.Thing, m.recv, in.cfg.limits())
	if err != nil {
		return in.rejected(ctx, m, err)
	}
	data, err := json.Marshal(telemetryRecord{V: wire.Version, Tenant: tp.Tenant, Thing: tp.Thing, Seq: t.Seq, LastSeq: t.LastSeq(), ReceivedAt: m.recv.UTC(), Samples: t.Samples})
	if err != nil {
		return fmt.Errorf("encode telemetry of %s seq %d: %w", tp.Thing, t.Seq, err)
	}
	err = in.producer.Put(ctx, tp.Thing, data, func(err error) {
		if err != nil {
			in.log.Warn("telemetry not accepted before shutdown; not acknowledged", "thing", tp.Thing, "seq", t.Seq, "err", err)
			return
		}
		in.gaps.Observe(tp.Tenant, tp.Thing, LaneTelemetry, t.Seq, t.LastSeq())
		in.cfg.Observer.Acked(Ack{Kind: tp.Kind, Tenant: tp.Tenant, Thing: tp.Thing, Seq: t.Seq, LastSeq: t.LastSeq(), Samples: len(t.Samples), SinceReceipt: in.cfg.Now().Sub(m.recv)})
		m.ack()
	})
	if err != nil {
		if errors.Is(err, telemetry.ErrClosed) || ctx.Err() != nil {
			return err
		}
		return in.rejected(ctx, m, reject(ReasonOversize, "%v", err))
	}
	return nil
}

func (in *Ingester) handleEvent(ctx context.Context, m message) error {
	tp := m.tp
	ev, err := DecodeEvent(m.raw, tp.Thing, m.recv, in.cfg.limits())
	m.typ = ev.Type
	if err != nil {
		return in.rejected(ctx, m, err)
	}
	var outcome emitOutcome
	err = in.retry(ctx, "emit "+ev.Type+" "+ev.ID+" of "+tp.Thing, func() error {
		var err error
		outcome, err = in.emitEvent(ctx, tp.Tenant, ev, m.raw)
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
	in.gaps.Observe(tp.Tenant, tp.Thing, LaneEvents, ev.Seq, ev.Seq)
	if ev.Type == wire.TypeTelemetryDropped {
		var d struct {
			FromSeq uint64 `json:"from_seq"`
			ToSeq   uint64 `json:"to_seq"`
		}
		if json.Unmarshal(ev.Data, &d) == nil && d.FromSeq > 0 && d.ToSeq >= d.FromSeq {
			in.gaps.Observe(tp.Tenant, tp.Thing, LaneTelemetry, d.FromSeq, d.ToSeq)
		}
	}
	in.cfg.Observer.Acked(Ack{Kind: tp.Kind, Tenant: tp.Tenant, Thing: tp.Thing, Seq: ev.Seq, LastSeq: ev.Seq, SinceReceipt: in.cfg.Now().Sub(m.recv)})
	m.ack()
	return nil
}

// rejected dead-letters a rejection of m and acknowledges m; other errors
// are returned, m unacknowledged.
func (in *Ingester) rejected(ctx context.Context, m message, err error) error {
	var rej *Rejection
	if !errors.As(err, &rej) {
		return err
	}
	in.log.Info("message rejected", "topic", m.topic, "reason", rej.Reason, "detail", rej.Detail)
	if err := in.retry(ctx, "dead-letter a message from "+m.topic, func() error {
		return in.deadLetter(ctx, m, rej)
	}); err != nil {
		return err
	}
	in.cfg.Observer.Rejected(m.kind, rej.Reason)
	in.cfg.Observer.Acked(Ack{Kind: m.kind, Tenant: m.tp.Tenant, Thing: m.tp.Thing})
	m.ack()
	return nil
}
