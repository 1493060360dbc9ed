package seedinbox

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
)

// QueueAPI is the part of the SQS client the consumer and Redrive use;
// safe for concurrent use, as *sqs.Client is.
type QueueAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ QueueAPI = (*sqs.Client)(nil)

// DeadLetters records dead work and poison pills (deadletter.Store).
type DeadLetters interface {
	Record(ctx context.Context, l deadletter.Letter) error
	RecordPoison(ctx context.Context, l deadletter.Letter) error
}

var _ DeadLetters = (*deadletter.Store)(nil)

// Config configures a Consumer.
type Config struct {
	// Queue and QueueURL: the events queue. Required.
	Queue    QueueAPI
	QueueURL string
	// Store and DeadLetters are required.
	Store       *Store
	DeadLetters DeadLetters
	// Subscriptions are matched on the DURABLE lane; each needs a Handler.
	Subscriptions []engine.Subscription
	// WaitTime is the long-poll wait, 0-20s. Default 10s.
	WaitTime time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.Queue == nil || c.QueueURL == "":
		return errors.New("seed consumer config: Queue and QueueURL are required")
	case c.Store == nil || c.DeadLetters == nil:
		return errors.New("seed consumer config: Store and DeadLetters are required")
	case c.WaitTime < 0 || c.WaitTime > 20*time.Second:
		return errors.New("seed consumer config: WaitTime not in 0-20s")
	}
	for _, s := range c.Subscriptions {
		if s.Lane == engine.Durable && s.Handler == nil {
			return errors.New("seed consumer config: durable subscription " + s.Name + " has no handler")
		}
	}
	return nil
}

// Consumer is the article's durable consumer.
type Consumer struct {
	cfg Config
	log *slog.Logger
}

// New returns a Consumer for cfg.
func New(cfg Config) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.WaitTime == 0 {
		cfg.WaitTime = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Consumer{cfg: cfg, log: cfg.Logger}, nil
}

// Run long-polls the queue, ten messages at a time, and handles them one
// by one until ctx ends. It returns nil when ctx ends.
func (c *Consumer) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		out, err := c.cfg.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(c.cfg.QueueURL), MaxNumberOfMessages: 10,
			WaitTimeSeconds:             int32(c.cfg.WaitTime / time.Second),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId},
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.log.Warn("seed receive failed", "err", err)
			_ = sleep(ctx, time.Second)
			continue
		}
		for _, m := range out.Messages {
			if err := c.handle(ctx, m); err != nil {
				// The exception escapes the loop: the rest of this receive
				// reappears after the visibility timeout.
				c.log.Warn("seed delivery failed; leaving the rest of the receive", "message_id", aws.ToString(m.MessageId), "err", err)
				break
			}
		}
	}
	return nil
}

// handle is the article's loop for one message; an error leaves the
// message in the queue.
func (c *Consumer) handle(ctx context.Context, m sqstypes.Message) error {
	body := aws.ToString(m.Body)
	env, err := engine.DecodeImageJSON([]byte(body))
	if err != nil {
		letter := deadletter.Letter{MessageID: aws.ToString(m.MessageId), Body: body, Error: err.Error(), GroupID: m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]}
		if err := c.cfg.DeadLetters.RecordPoison(ctx, letter); err != nil {
			return err
		}
		return c.delete(ctx, m)
	}
	for _, sub := range engine.Match(c.cfg.Subscriptions, engine.Durable, env.Type) {
		ok, err := c.cfg.Store.Claim(ctx, env.ID, sub.Name)
		if err != nil {
			return err
		}
		if !ok {
			c.log.Info("seed claim refused; skipping", "event_id", env.ID, "subscription", sub.Name)
			continue // someone already has it
		}
		herr := sub.Handler(engine.ContextFor(ctx, env), env)
		if herr == nil {
			if err := c.cfg.Store.MarkCompleted(ctx, env.ID, sub.Name); err != nil {
				return err
			}
			continue
		}
		c.log.Warn("seed handler failed; marking dead", "event_id", env.ID, "subscription", sub.Name, "err", herr)
		if err := c.cfg.Store.MarkDead(ctx, env.ID, sub.Name, herr.Error()); err != nil {
			return err
		}
		letter := deadletter.Letter{
			Tenant: env.Tenant, EventID: env.ID, EventType: env.Type, Subscription: sub.Name,
			Error: herr.Error(), Attempts: 1, MessageID: aws.ToString(m.MessageId),
			GroupID: m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)],
		}
		if err := c.cfg.DeadLetters.Record(ctx, letter); err != nil {
			return err
		}
	}
	return c.delete(ctx, m)
}

func (c *Consumer) delete(ctx context.Context, m sqstypes.Message) error {
	_, err := c.cfg.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(c.cfg.QueueURL), ReceiptHandle: m.ReceiptHandle})
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
