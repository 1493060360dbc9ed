package forward

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"golang.org/x/time/rate"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/backoff"
)

// Source is the outbox as the forwarder sees it. Implementations are safe
// for concurrent use; Ack is called from publish completions, AckTelemetry
// from the cloud ack handler.
type Source interface {
	// Things lists things with pending records in lane.
	Things(lane outbox.Lane) ([]string, error)
	// Events returns up to max pending events of thing from seq on.
	Events(ctx context.Context, thing string, from uint64, max int) ([]outbox.Record, error)
	// TelemetryBatch returns thing's next sealed telemetry batch from seq
	// on (wire v1).
	TelemetryBatch(ctx context.Context, thing string, from uint64, lim outbox.BatchLimit) (outbox.Batch, bool, error)
	// Ack removes first..last of thing's lane; called only after a PUBACK
	// (events, and telemetry in wire v1).
	Ack(ctx context.Context, lane outbox.Lane, thing string, first, last uint64) error
	// ID is the outbox instance id (wire v2).
	ID() string
	// Telemetry returns up to max pending telemetry records of thing with
	// from <= seq <= to (to 0: no bound), without sealing (wire v2).
	Telemetry(ctx context.Context, thing string, from, to uint64, max int) ([]outbox.Record, error)
	// AckTelemetry removes what a cloud ack names, never a seq above a
	// thing's SentUpTo, and nothing when outboxID is not ID() (wire v2).
	AckTelemetry(ctx context.Context, outboxID string, acks []outbox.ThingAck) (int, error)
	// Changed is closed when new records are committed.
	Changed() <-chan struct{}
}

var _ Source = (*outbox.Outbox)(nil)

// Forwarder publishes a Source to an MQTT broker.
type Forwarder struct {
	cfg     Config
	src     Source
	limiter *rate.Limiter // messages
	bytes   *rate.Limiter // payload bytes

	sent *ledger // telemetry sent and not acknowledged (wire v2)

	mu     sync.Mutex
	status wire.MQTTStatus
}

// New returns a Forwarder for src; it validates cfg.
func New(cfg Config, src Source) (*Forwarder, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	burst := max(1, int(cfg.Rate/10))
	return &Forwarder{
		cfg:     cfg,
		src:     src,
		limiter: rate.NewLimiter(rate.Limit(cfg.Rate), burst),
		bytes:   rate.NewLimiter(rate.Limit(cfg.ByteRate), max(cfg.ByteRate, cfg.MaxPayload)),
		status:  wire.MQTTStatus{Broker: cfg.Broker, Telemetry: wire.TelemetryStatus{Wire: cfg.Wire}},
		sent:    newLedger(),
	}, nil
}

// Status returns a snapshot of the forwarder's state.
func (f *Forwarder) Status() wire.MQTTStatus {
	n, oldest := f.sent.unacked()
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.status
	s.Telemetry.UnackedSent, s.Telemetry.OldestUnackedSent = n, oldest
	return s
}

func (f *Forwarder) update(fn func(s *wire.MQTTStatus)) {
	f.mu.Lock()
	fn(&f.status)
	f.mu.Unlock()
}

// Run connects and forwards until ctx ends, reconnecting with jittered
// exponential backoff. It returns ctx's error, or an error from the source
// (the outbox failing is not something a reconnect fixes).
func (f *Forwarder) Run(ctx context.Context) error {
	// Equal jitter: a fleet of gateways that lost the same broker does not
	// reconnect in lockstep, and none retries at once.
	reconnect := backoff.Policy{Base: f.cfg.BackoffMin, Max: f.cfg.BackoffMax, Jitter: 0.5}
	attempt := 0
	for {
		connected, err := f.session(ctx)
		var srcErr *sourceError
		if errors.As(err, &srcErr) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			f.update(func(s *wire.MQTTStatus) { s.LastError = err.Error() })
			f.cfg.Logger.Warn("mqtt session ended", "broker", f.cfg.Broker, "err", err)
		}
		if connected {
			attempt = 0
		}
		d := reconnect.Delay(attempt)
		attempt++
		f.cfg.Logger.Info("mqtt reconnecting", "broker", f.cfg.Broker, "in", d)
		if err := backoff.Sleep(ctx, d); err != nil {
			return err
		}
	}
}

// sourceError marks a failure of the Source, which ends Run.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

func (f *Forwarder) clientOptions(lost func(error)) *paho.ClientOptions {
	will := encodeStatus(f.cfg.Thing, wire.StateOffline)
	o := paho.NewClientOptions().
		AddBroker(f.cfg.Broker).
		SetClientID(f.cfg.ClientID).
		SetCleanSession(false).
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetKeepAlive(f.cfg.KeepAlive).
		SetPingTimeout(f.cfg.ConnectTimeout).
		SetConnectTimeout(f.cfg.ConnectTimeout).
		SetWriteTimeout(f.cfg.ConnectTimeout).
		SetOrderMatters(false).
		SetWill(f.cfg.topic(f.cfg.Thing, wire.KindStatus), string(will), 1, true).
		SetConnectionLostHandler(func(_ paho.Client, err error) { lost(err) })
	if f.cfg.Wire == WireV2 {
		// A persistent session may deliver acks before Subscribe returns.
		o.SetDefaultPublishHandler(f.ackHandler)
	}
	if f.cfg.TLS != nil {
		o.SetTLSConfig(f.cfg.TLS)
	}
	return o
}

// session runs one connection. connected reports whether it got as far as
// a CONNACK.
func (f *Forwarder) session(ctx context.Context) (connected bool, err error) {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	client := paho.NewClient(f.clientOptions(func(err error) {
		cancel(fmt.Errorf("%w: %v", ErrConnectionLost, err))
	}))
	tok := client.Connect()
	select {
	case <-tok.Done():
	case <-ctx.Done():
		return false, ctx.Err()
	}
	if err := tok.Error(); err != nil {
		return false, fmt.Errorf("broker %s: %w: %v", f.cfg.Broker, ErrConnect, err)
	}
	defer client.Disconnect(100)
	f.update(func(s *wire.MQTTStatus) { s.Connected = true; s.Connects++; s.LastError = "" })
	f.cfg.Observer.Connection(true)
	defer func() {
		f.update(func(s *wire.MQTTStatus) { s.Connected = false; s.InFlight = 0 })
		f.cfg.Observer.Connection(false)
	}()
	f.cfg.Logger.Info("mqtt connected", "broker", f.cfg.Broker, "client_id", f.cfg.ClientID)
	client.Publish(f.cfg.topic(f.cfg.Thing, wire.KindStatus), 1, true, encodeStatus(f.cfg.Thing, wire.StateOnline))
	if f.cfg.Wire == WireV2 {
		if err := f.subscribeAcks(sctx, client); err != nil {
			return true, err
		}
	}

	p := &pump{f: f, client: client, ctx: ctx, sctx: sctx, cancel: cancel,
		sem: make(chan struct{}, f.cfg.InFlight), cursor: map[cursorKey]uint64{},
		nextBatch: time.Now()}
	defer p.wg.Wait()
	for {
		changed := f.src.Changed()
		n, err := p.round()
		if err != nil {
			return true, err
		}
		if n > 0 {
			continue
		}
		wait := time.Second
		if f.cfg.Wire == WireV2 {
			wait = min(wait, max(0, time.Until(p.nextBatch)))
		}
		select {
		case <-sctx.Done():
			if ctx.Err() != nil {
				return true, ctx.Err()
			}
			return true, context.Cause(sctx)
		case <-changed:
		case <-time.After(wait):
		}
	}
}

type cursorKey struct {
	lane  outbox.Lane
	thing string
}

// pump is one session's publishing state: what has been sent (cursors) and
// the in-flight window.
type pump struct {
	f      *Forwarder
	client paho.Client
	ctx    context.Context // the Run context: acks use it
	sctx   context.Context // ends with the session
	cancel context.CancelCauseFunc
	sem    chan struct{}
	wg     sync.WaitGroup
	cursor map[cursorKey]uint64
	// nextBatch is when the next telemetry batch is due (wire v2).
	nextBatch time.Time
}

// round publishes what is pending: every thing's events, and only when no
// event was pending, telemetry: in wire v1 one message per thing, in wire
// v2 the gateway's batch when it is due. It returns how many messages it
// published.
func (p *pump) round() (int, error) {
	src := p.f.src
	things, err := src.Things(outbox.Events)
	if err != nil {
		return 0, &sourceError{fmt.Errorf("list things with events: %w", err)}
	}
	n := 0
	for _, thing := range things {
		k := cursorKey{outbox.Events, thing}
		recs, err := src.Events(p.sctx, thing, p.cursor[k], 64)
		if err != nil {
			return n, p.srcErr(fmt.Errorf("read events of %s: %w", thing, err))
		}
		for _, r := range recs {
			payload, err := encodeEvent(r, p.f.cfg.Now())
			if err != nil {
				return n, &sourceError{err}
			}
			p.cursor[k] = r.Seq + 1
			if len(payload) > p.f.cfg.MaxPayload {
				p.f.cfg.Logger.Error("event larger than max payload; kept in the outbox, not sent", "thing", thing, "seq", r.Seq, "bytes", len(payload), "err", ErrTooLarge)
				continue
			}
			if err := p.publish(outbox.Events, 1, p.f.cfg.eventsTopic(thing), payload, p.ackSource(outbox.Events, thing, r.Seq, r.Seq), nil); err != nil {
				return n, err
			}
			n++
		}
	}
	if n > 0 {
		return n, nil
	}
	if p.f.cfg.Wire == WireV2 {
		return p.batchRound()
	}
	things, err = src.Things(outbox.Telemetry)
	if err != nil {
		return 0, &sourceError{fmt.Errorf("list things with telemetry: %w", err)}
	}
	for _, thing := range things {
		k := cursorKey{outbox.Telemetry, thing}
		lim := outbox.BatchLimit{MaxSamples: p.f.cfg.MaxBatchSamples, MaxBytes: p.f.cfg.MaxPayload - envelopeCost(thing), Cost: sampleCost}
		bt, ok, err := src.TelemetryBatch(p.sctx, thing, p.cursor[k], lim)
		if err != nil {
			return n, p.srcErr(fmt.Errorf("read telemetry of %s: %w", thing, err))
		}
		if !ok {
			continue
		}
		payload, err := encodeTelemetry(bt, p.f.cfg.Now())
		if err != nil {
			return n, &sourceError{err}
		}
		p.cursor[k] = bt.Last + 1
		if err := p.publish(outbox.Telemetry, len(bt.Samples), p.f.cfg.topic(thing, wire.KindTelemetry), payload, p.ackSource(outbox.Telemetry, thing, bt.First, bt.Last), nil); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (p *pump) srcErr(err error) error {
	if p.sctx.Err() != nil {
		return context.Cause(p.sctx)
	}
	return &sourceError{err}
}

// ackSource returns the PUBACK action of events, and of telemetry in wire
// v1: remove the message's records from the outbox.
func (p *pump) ackSource(lane outbox.Lane, thing string, first, last uint64) func() error {
	return func() error {
		if err := p.f.src.Ack(p.ctx, lane, thing, first, last); err != nil {
			return &sourceError{fmt.Errorf("ack %s %s %d..%d: %w", lane, thing, first, last, err)}
		}
		return nil
	}
}

// publish sends one message within the window and the rate limits. When
// its PUBACK arrives, onPuback runs (an error ends the session); when the
// message is not PUBACKed (publish error, no PUBACK within PubackTimeout,
// which ends the session, session over), onLost runs instead. Either may be nil. publish returns an error, and runs neither,
// only when the session ended before the message was handed to the client.
func (p *pump) publish(lane outbox.Lane, records int, topic string, payload []byte, onPuback func() error, onLost func()) error {
	select {
	case p.sem <- struct{}{}:
	case <-p.sctx.Done():
		return context.Cause(p.sctx)
	}
	if err := p.f.limiter.Wait(p.sctx); err != nil {
		<-p.sem
		return context.Cause(p.sctx)
	}
	if err := p.f.bytes.WaitN(p.sctx, min(len(payload), p.f.bytes.Burst())); err != nil {
		<-p.sem
		return context.Cause(p.sctx)
	}
	sent := time.Now()
	tok := p.client.Publish(topic, 1, false, payload)
	p.f.update(func(s *wire.MQTTStatus) { s.InFlight = len(p.sem); s.Published++ })
	p.f.cfg.Observer.Published(lane, records)
	lost := func() {
		if onLost != nil {
			onLost()
		}
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer func() { <-p.sem }()
		deadline := time.NewTimer(p.f.cfg.PubackTimeout)
		defer deadline.Stop()
		select {
		case <-tok.Done():
		case <-p.sctx.Done():
			lost()
			return
		case <-deadline.C:
			// A broker that throttles may never answer; paho does not
			// resend on a live connection. Only a new session resends.
			lost()
			p.f.update(func(s *wire.MQTTStatus) { s.PubackTimeouts++ })
			p.f.cfg.Observer.PubackTimeout(lane)
			p.cancel(fmt.Errorf("publish %s: %w after %s", topic, ErrPubackTimeout, p.f.cfg.PubackTimeout))
			return
		}
		if err := tok.Error(); err != nil {
			lost()
			p.cancel(fmt.Errorf("publish %s: %w", topic, err))
			return
		}
		if onPuback != nil {
			if err := onPuback(); err != nil {
				p.cancel(err)
				return
			}
		}
		now := time.Now()
		p.f.update(func(s *wire.MQTTStatus) { s.LastPuback = now; s.Acked++; s.InFlight = len(p.sem) - 1 })
		p.f.cfg.Observer.Acked(lane, records, now.Sub(sent))
	}()
	return nil
}
