package rules

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/telemetry"
	"github.com/bowline-iot/bowline/edge/wire"
)

// maxReconnectInterval caps paho's backoff between reconnections (as
// cloud/ingest does; AWS IoT allows one CONNECT per second per client id).
const maxReconnectInterval = 2 * time.Second

// Runner is the local stand-in for the AWS IoT rules engine running
// Config.Rules. Build it with New (cloud/app's App.Rules), then Run it.
type Runner struct {
	cfg Config
	log *slog.Logger
	// producers holds one Kinesis producer per stream a rule acts on.
	producers map[string]*telemetry.Producer
	counts    counter
	observe   []Observer

	// byName maps a full rule name to its spec (Basic Ingest topics);
	// broker lists the rules also reached on From.
	byName map[string]Spec
	broker []Spec

	gate     sync.RWMutex
	draining bool
	stopping chan struct{}  // closed when Run starts draining
	inflight sync.WaitGroup // messages taken and not yet settled
	// slots holds one token per message in flight: Config.MaxInFlight
	// bounds it; inFlight is its length, for InFlight and the observers.
	slots    chan struct{}
	inFlight atomic.Int64

	ready     chan struct{}
	readyOnce sync.Once
	closeOnce sync.Once
}

// New fills cfg's defaults, validates it and starts the Kinesis
// producers; Run connects.
func New(cfg Config) (*Runner, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Runner{
		cfg: cfg, log: cfg.Logger, producers: map[string]*telemetry.Producer{},
		byName: map[string]Spec{}, ready: make(chan struct{}),
		stopping: make(chan struct{}), slots: make(chan struct{}, cfg.MaxInFlight),
	}
	for _, s := range cfg.Rules {
		stream := r.stream(s)
		if r.producers[stream] != nil {
			continue
		}
		pc := cfg.Producer
		pc.Stream = stream
		p, err := telemetry.NewProducer(cfg.Kinesis, pc)
		if err != nil {
			r.Close(context.Background())
			return nil, fmt.Errorf("rules: %w", err)
		}
		r.producers[stream] = p
	}
	r.observe = []Observer{&r.counts, cfg.Observer}
	for _, s := range cfg.Rules {
		r.byName[s.Name(cfg.Stack)] = s
		if s.Broker {
			r.broker = append(r.broker, s)
		}
	}
	return r, nil
}

// stream is the stream spec's action writes.
func (r *Runner) stream(s Spec) string {
	if st, ok := r.cfg.Streams[s.Base]; ok {
		return st
	}
	return r.cfg.Stream
}

// InFlight is the number of messages taken from the broker and not yet
// settled; it never exceeds Config.MaxInFlight.
func (r *Runner) InFlight() int { return int(r.inFlight.Load()) }

// Counts returns what each rule (by base name) has done so far.
func (r *Runner) Counts() map[string]Counts { return r.counts.snapshot() }

// Ready is closed once the first subscription is acknowledged.
func (r *Runner) Ready() <-chan struct{} { return r.ready }

// Filters are the MQTT filters the Runner subscribes to.
func (r *Runner) Filters() []string {
	var fs []string
	for _, s := range r.cfg.Rules {
		fs = append(fs, s.Subscriptions(r.cfg.Stack)...)
	}
	return fs
}

// route finds the rule of a topic and the topic as the rule sees it.
func (r *Runner) route(topic string) (Spec, string, bool) {
	if name, inner, ok := wire.SplitBasicIngest(topic); ok {
		s, ok := r.byName[name]
		return s, inner, ok
	}
	for _, s := range r.broker {
		if Match(s.From, topic) {
			return s, topic, true
		}
	}
	return Spec{}, "", false
}

// Handle runs the rule of one message and calls ack once its record is in
// Kinesis, or once its error message is in the error queue. ack is not
// called when the message must be delivered again (the producer closed,
// or the error queue refused it); Handle returns before that is known.
// It returns an error only when the message was not taken at all.
//
// At most Config.MaxInFlight messages are in flight (taken and not yet
// settled): Handle waits for a free slot first, until ctx ends or Run
// starts draining. Run's MQTT client calls it on paho's one delivery
// goroutine, so while Handle waits paho reads nothing more and the broker
// keeps the rest (docs/telemetry-path.md, "The stand-in").
func (r *Runner) Handle(ctx context.Context, topic string, payload []byte, ack func()) error {
	if err := r.take(ctx); err != nil {
		return fmt.Errorf("rules: %s: %w", topic, err)
	}
	r.gate.RLock()
	if r.draining {
		r.gate.RUnlock()
		r.release()
		return fmt.Errorf("rules: %s: %w", topic, errDraining)
	}
	r.inflight.Add(1)
	r.gate.RUnlock()
	spec, inner, ok := r.route(topic)
	if !ok {
		// Not a topic of a rule this stand-in runs (a subscription of an
		// earlier configuration, kept by the persistent session): nothing
		// would ever take it.
		r.log.Warn("message on a topic no running rule reads; acknowledged and dropped", "topic", topic)
		r.settle(ack)
		return nil
	}
	r.each(func(o Observer) { o.Evaluated(spec.Base, len(payload)) })
	rec, key, err := spec.Evaluate(inner, payload, r.cfg.Now())
	if err != nil {
		// AWS logs a failed evaluation and invokes no action, error action
		// included (docs/telemetry-path.md).
		r.each(func(o Observer) { o.Failed(spec.Base, StageEvaluate) })
		r.log.Error("rule evaluation failed; message acknowledged and dropped", "rule", spec.Name(r.cfg.Stack), "topic", topic, "err", err)
		r.settle(ack)
		return nil
	}
	// done runs on the producer's goroutine and must not block it: the
	// error queue is written from a goroutine of its own.
	done := func(err error) {
		switch {
		case err == nil:
			r.each(func(o Observer) { o.Acted(spec.Base, len(rec)) })
			r.settle(ack)
		case errors.Is(err, telemetry.ErrRetriesExhausted):
			go r.errorAction(spec, topic, payload, err, ack)
		default:
			r.log.Warn("record not put before shutdown; the broker redelivers the message", "rule", spec.Name(r.cfg.Stack), "topic", topic, "err", err)
			r.settle(nil)
		}
	}
	if err := r.producers[r.stream(spec)].Put(ctx, key, rec, done); err != nil {
		if errors.Is(err, telemetry.ErrClosed) || ctx.Err() != nil {
			r.settle(nil)
			return fmt.Errorf("rules: put %s: %w", topic, err)
		}
		// Kinesis would refuse the record (too large): the action fails.
		go r.errorAction(spec, topic, payload, err, ack)
	}
	return nil
}

// errDraining: Run is draining and takes no new message.
var errDraining = errors.New("draining; message left for redelivery")

// take waits for a free in-flight slot.
func (r *Runner) take(ctx context.Context) error {
	select {
	case r.slots <- struct{}{}:
	default:
		select {
		case r.slots <- struct{}{}:
		case <-r.stopping:
			return errDraining
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.inFlight.Add(1)
	r.each(func(o Observer) { o.InFlight(1) })
	return nil
}

// release frees a slot that take took.
func (r *Runner) release() {
	r.inFlight.Add(-1)
	r.each(func(o Observer) { o.InFlight(-1) })
	<-r.slots
}

// settle ends a message Handle took: its slot is freed first, so the next
// message can be taken before the broker hears of this one, then ack (nil
// when the message is left for redelivery) is called.
func (r *Runner) settle(ack func()) {
	r.release()
	if ack != nil {
		ack()
	}
	r.inflight.Done()
}

func (r *Runner) each(f func(Observer)) {
	for _, o := range r.observe {
		f(o)
	}
}

// errorAction sends the message's ErrorMessage to the error queue and
// acknowledges the message once the queue has it; either way it settles
// the message.
func (r *Runner) errorAction(spec Spec, topic string, payload []byte, cause error, ack func()) {
	stream := r.stream(spec)
	msg := ErrorMessage{
		RuleName:              spec.Name(r.cfg.Stack),
		Topic:                 topic,
		Base64OriginalPayload: base64.StdEncoding.EncodeToString(payload),
		Failures: []Failure{{
			FailedAction:   KinesisAction,
			FailedResource: stream,
			ErrorMessage:   fmt.Sprintf("Failed to put record into Kinesis stream %s: %v", stream, cause),
		}},
	}
	body, err := json.Marshal(msg)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.SendTimeout)
		_, err = r.cfg.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(r.cfg.ErrorQueueURL), MessageBody: aws.String(string(body))})
		cancel()
	}
	if err != nil {
		r.each(func(o Observer) { o.Failed(spec.Base, StageErrorAction) })
		r.log.Error("error action failed; message left unacknowledged for redelivery", "rule", msg.RuleName, "topic", topic, "cause", cause, "err", err)
		r.settle(nil)
		return
	}
	r.each(func(o Observer) { o.Failed(spec.Base, StageAction) })
	r.log.Warn("action failed; message sent to the error queue", "rule", msg.RuleName, "topic", topic, "err", cause)
	r.settle(ack)
}

// Run connects to the broker, subscribes and handles messages until ctx
// ends; then it takes no new message, waits up to DrainTimeout for those
// in progress and disconnects. The session keeps the subscriptions, so
// what arrives meanwhile is delivered to the next Run under the same
// client id.
func (r *Runner) Run(ctx context.Context) error {
	c, err := r.connect(ctx)
	if err != nil {
		r.Close(context.Background())
		return err
	}
	<-ctx.Done()
	r.gate.Lock()
	if !r.draining {
		r.draining = true
		close(r.stopping)
	}
	r.gate.Unlock()
	drain, cancel := context.WithTimeout(context.Background(), r.cfg.DrainTimeout)
	defer cancel()
	waited := make(chan struct{})
	go func() { r.inflight.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-drain.Done():
		r.log.Warn("drain timed out; unacknowledged messages are redelivered on reconnect", "timeout", r.cfg.DrainTimeout)
	}
	r.Close(drain)
	c.Disconnect(250)
	return nil
}

// Close stops the producers: records not yet in Kinesis when ctx ends are
// abandoned and their messages stay unacknowledged. Run calls it.
func (r *Runner) Close(ctx context.Context) error {
	var errs []error
	r.closeOnce.Do(func() {
		for _, p := range r.producers {
			errs = append(errs, p.Close(ctx))
		}
	})
	return errors.Join(errs...)
}

// connect starts paho with a persistent session and manual acks, and
// subscribes (QoS 1) on every connection.
func (r *Runner) connect(ctx context.Context) (mqtt.Client, error) {
	filters := map[string]byte{}
	for _, f := range r.Filters() {
		filters[f] = 1
	}
	o := mqtt.NewClientOptions().
		AddBroker(r.cfg.Broker).
		SetClientID(r.cfg.ClientID).
		SetCleanSession(false).
		SetAutoAckDisabled(true).
		// In order: paho calls the handler on its one delivery goroutine,
		// so a handler waiting for an in-flight slot stops paho reading
		// and the broker keeps the rest of the session's messages. Out of
		// order, paho would start a goroutine per message, each holding
		// its payload while it waits: the unbounded heap this bound is for.
		SetOrderMatters(true).
		SetAutoReconnect(true).
		SetConnectRetry(true).
		SetConnectRetryInterval(time.Second).
		SetMaxReconnectInterval(maxReconnectInterval).
		// A broker that accepts TCP but never answers CONNECT must not
		// hold a reconnect for paho's default 30s.
		SetConnectTimeout(5 * time.Second).
		SetKeepAlive(30 * time.Second).
		// While Handle waits for a slot paho reads nothing, PINGRESP
		// included: give a wait for the oldest Kinesis call (Producer's
		// CallTimeout) room before paho calls the connection dead, or a
		// reconnect would bring the whole window back as duplicates.
		SetPingTimeout(pingTimeout(r.cfg.Producer.CallTimeout)).
		SetDefaultPublishHandler(func(_ mqtt.Client, m mqtt.Message) {
			if err := r.Handle(ctx, m.Topic(), m.Payload(), m.Ack); err != nil {
				r.log.Warn("message not acknowledged; the broker redelivers it on reconnect", "topic", m.Topic(), "err", err)
			}
		}).
		SetConnectionLostHandler(func(_ mqtt.Client, err error) {
			r.log.Warn("mqtt connection lost; reconnecting", "broker", r.cfg.Broker, "err", err)
		})
	if r.cfg.Username != "" {
		o.SetUsername(r.cfg.Username).SetPassword(r.cfg.Password)
	}
	if r.cfg.TLS != nil {
		o.SetTLSConfig(r.cfg.TLS)
	}
	subscribed := make(chan error, 1)
	o.SetOnConnectHandler(func(c mqtt.Client) {
		tok := c.SubscribeMultiple(filters, nil)
		go func() {
			tok.Wait()
			err := tok.Error()
			if err == nil {
				err = refused(tok)
			}
			if err != nil {
				r.log.Error("mqtt subscribe failed", "filters", r.Filters(), "err", err)
			} else {
				r.readyOnce.Do(func() { close(r.ready) })
				r.log.Info("mqtt subscribed", "broker", r.cfg.Broker, "client_id", r.cfg.ClientID, "filters", r.Filters())
			}
			select {
			case subscribed <- err:
			default:
			}
		}()
	})
	c := mqtt.NewClient(o)
	c.Connect()
	select {
	case err := <-subscribed:
		if err != nil {
			c.Disconnect(0)
			return nil, fmt.Errorf("rules: subscribe on %s: %w", r.cfg.Broker, err)
		}
		return c, nil
	case <-ctx.Done():
		c.Disconnect(0)
		return nil, fmt.Errorf("rules: connect to %s: %w", r.cfg.Broker, ctx.Err())
	}
}

// pingTimeout is how long paho waits for a PINGRESP: a Kinesis call and
// half a minute, at least paho's default 10 s.
func pingTimeout(callTimeout time.Duration) time.Duration {
	return max(10*time.Second, callTimeout+30*time.Second)
}

// refused reports a filter the broker granted with the failure code 0x80
// (a broker that refuses '$' topics answers so).
func refused(tok mqtt.Token) error {
	st, ok := tok.(*mqtt.SubscribeToken)
	if !ok {
		return nil
	}
	for f, qos := range st.Result() {
		if qos == 0x80 {
			return fmt.Errorf("broker refused subscription %q", f)
		}
	}
	return nil
}
