package rules

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
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
	inflight sync.WaitGroup // messages taken and not yet settled

	ready     chan struct{}
	readyOnce sync.Once
	closeOnce sync.Once
}

// New validates cfg and starts the Kinesis producer; Run connects.
func New(cfg Config) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Runner{
		cfg: cfg, log: cfg.Logger, producers: map[string]*telemetry.Producer{},
		byName: map[string]Spec{}, ready: make(chan struct{}),
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
	r.observe = []Observer{&r.counts}
	if cfg.Observer != nil {
		r.observe = append(r.observe, cfg.Observer)
	}
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
func (r *Runner) Handle(ctx context.Context, topic string, payload []byte, ack func()) error {
	r.gate.RLock()
	if r.draining {
		r.gate.RUnlock()
		return errors.New("rules: draining; message left for redelivery")
	}
	r.inflight.Add(1)
	r.gate.RUnlock()
	settled := false
	defer func() {
		if !settled {
			r.inflight.Done()
		}
	}()
	spec, inner, ok := r.route(topic)
	if !ok {
		// Not a topic of a rule this stand-in runs (a subscription of an
		// earlier configuration, kept by the persistent session): nothing
		// would ever take it.
		r.log.Warn("message on a topic no running rule reads; acknowledged and dropped", "topic", topic)
		ack()
		return nil
	}
	r.each(func(o Observer) { o.Evaluated(spec.Base, len(payload)) })
	rec, key, err := spec.Evaluate(inner, payload, r.cfg.Now())
	if err != nil {
		// AWS logs a failed evaluation and invokes no action, error action
		// included (docs/telemetry-path.md).
		r.each(func(o Observer) { o.Failed(spec.Base, StageEvaluate) })
		r.log.Error("rule evaluation failed; message acknowledged and dropped", "rule", spec.Name(r.cfg.Stack), "topic", topic, "err", err)
		ack()
		return nil
	}
	// done runs on the producer's goroutine and must not block it: the
	// error queue is written from a goroutine of its own.
	done := func(err error) {
		switch {
		case err == nil:
			r.each(func(o Observer) { o.Acted(spec.Base, len(rec)) })
			ack()
		case errors.Is(err, telemetry.ErrRetriesExhausted):
			go func() {
				defer r.inflight.Done()
				r.errorAction(spec, topic, payload, err, ack)
			}()
			return
		default:
			r.log.Warn("record not put before shutdown; the broker redelivers the message", "rule", spec.Name(r.cfg.Stack), "topic", topic, "err", err)
		}
		r.inflight.Done()
	}
	if err := r.producers[r.stream(spec)].Put(ctx, key, rec, done); err != nil {
		if errors.Is(err, telemetry.ErrClosed) || ctx.Err() != nil {
			return fmt.Errorf("rules: put %s: %w", topic, err)
		}
		// Kinesis would refuse the record (too large): the action fails.
		settled = true
		go func() {
			defer r.inflight.Done()
			r.errorAction(spec, topic, payload, err, ack)
		}()
		return nil
	}
	settled = true
	return nil
}

func (r *Runner) each(f func(Observer)) {
	for _, o := range r.observe {
		f(o)
	}
}

// errorAction sends the message's ErrorMessage to the error queue and
// acknowledges the message once the queue has it.
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
		return
	}
	r.each(func(o Observer) { o.Failed(spec.Base, StageAction) })
	r.log.Warn("action failed; message sent to the error queue", "rule", msg.RuleName, "topic", topic, "err", cause)
	ack()
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
	r.draining = true
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
		SetOrderMatters(false).
		SetAutoReconnect(true).
		SetConnectRetry(true).
		SetConnectRetryInterval(time.Second).
		SetMaxReconnectInterval(maxReconnectInterval).
		SetKeepAlive(30 * time.Second).
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
