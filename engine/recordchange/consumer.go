package recordchange

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/engine"
)

// QueueAPI is the part of the SQS client the consumer uses.
type QueueAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

var _ QueueAPI = (*sqs.Client)(nil)

// Config configures a Consumer.
type Config struct {
	// Queue and QueueURL: the record-changes queue. Required.
	Queue    QueueAPI
	QueueURL string
	// Subscriptions are matched on the BEST_EFFORT lane; others are ignored.
	Subscriptions []engine.Subscription
	// WaitTime is the long-poll wait. Default 10s.
	WaitTime time.Duration
	// Logger defaults to slog.Default(); Observer to NopObserver (Metrics
	// is the Prometheus one).
	Logger   *slog.Logger
	Observer Observer
}

// setDefaults fills the zero fields with their defaults.
func (c *Config) setDefaults() {
	if c.WaitTime == 0 {
		c.WaitTime = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
}

// Validate checks the config; it does not change it.
func (c Config) Validate() error {
	if c.Queue == nil || c.QueueURL == "" {
		return errors.New("record-change config: Queue and QueueURL are required")
	}
	if c.WaitTime < 0 || c.WaitTime > 20*time.Second {
		return fmt.Errorf("record-change config: WaitTime %v not in 0-20s", c.WaitTime)
	}
	for _, s := range c.Subscriptions {
		if s.Lane == engine.BestEffort && s.Handler == nil {
			return fmt.Errorf("record-change config: subscription %q has no handler", s.Name)
		}
	}
	return nil
}

// Metrics is an Observer that counts what the consumer does in Prometheus.
type Metrics struct {
	handled   *prometheus.CounterVec
	bad       prometheus.Counter
	unmatched *prometheus.CounterVec
}

// NewMetrics registers the consumer's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		handled:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_record_change_handled_total", Help: "BEST_EFFORT handler runs by outcome."}, []string{"subscription", "outcome"}),
		bad:       prometheus.NewCounter(prometheus.CounterOpts{Name: "bowline_record_change_bad_records_total", Help: "Record-change messages that did not decode."}),
		unmatched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_record_change_unmatched_total", Help: "Row changes that matched no BEST_EFFORT subscription."}, []string{"type"}),
	}
	reg.MustRegister(m.handled, m.bad, m.unmatched)
	return m
}

// Consumer dispatches row changes to BEST_EFFORT subscriptions.
type Consumer struct {
	cfg  Config
	log  *slog.Logger
	subs []engine.Subscription
}

// New fills cfg's defaults, validates it and returns a Consumer.
func New(cfg Config) (*Consumer, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var subs []engine.Subscription
	for _, s := range cfg.Subscriptions {
		if s.Lane == engine.BestEffort {
			subs = append(subs, s)
		}
	}
	return &Consumer{cfg: cfg, log: cfg.Logger.With("lane", "best_effort"), subs: subs}, nil
}

// Run consumes until ctx ends and returns nil.
func (c *Consumer) Run(ctx context.Context) error {
	for failures := 0; ctx.Err() == nil; {
		out, err := c.cfg.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(c.cfg.QueueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: int32(c.cfg.WaitTime / time.Second),
		})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failures++
			c.log.Warn("receive failed; retrying", "err", err)
			t := time.NewTimer(time.Duration(min(failures, 6)) * 250 * time.Millisecond)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		failures = 0
		var wg sync.WaitGroup
		for _, m := range out.Messages {
			wg.Go(func() { c.handle(context.WithoutCancel(ctx), m) })
		}
		wg.Wait()
	}
	return nil
}

func (c *Consumer) handle(ctx context.Context, m sqstypes.Message) {
	env, err := Decode([]byte(aws.ToString(m.Body)))
	switch {
	case err != nil:
		c.log.Error("record change does not decode; dropping it", "message_id", aws.ToString(m.MessageId), "err", err)
		c.cfg.Observer.BadRecord()
	default:
		subs := engine.Match(c.subs, engine.BestEffort, env.Type)
		if len(subs) == 0 {
			c.cfg.Observer.Unmatched(env.Type)
		}
		hctx := ctx
		if env.Tenant != "" {
			hctx = engine.ContextFor(ctx, env)
		}
		for _, s := range subs {
			outcome := "ok"
			if err := safeRun(hctx, s, env); err != nil {
				outcome = "error"
				c.log.Warn("best-effort handler failed", "subscription", s.Name, "type", env.Type, "err", err)
			}
			c.cfg.Observer.Handled(s.Name, outcome)
		}
	}
	if _, err := c.cfg.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(c.cfg.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		c.log.Warn("delete failed; the change may be delivered again", "err", err)
	}
}

func safeRun(ctx context.Context, s engine.Subscription, env engine.Envelope) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return s.Handler(ctx, env)
}
