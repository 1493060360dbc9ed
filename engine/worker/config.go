package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// QueueAPI is the part of the SQS client the worker uses; it must be safe
// for concurrent use, as *sqs.Client is.
type QueueAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ QueueAPI = (*sqs.Client)(nil)

// Inbox is the claim state machine (inbox.Store); safe for concurrent use.
type Inbox interface {
	Claim(ctx context.Context, eventID, subscription, worker string, lease time.Duration) (inbox.Claim, error)
	Complete(ctx context.Context, c inbox.Claim) error
	Release(ctx context.Context, c inbox.Claim, cause error) error
	MarkDead(ctx context.Context, c inbox.Claim, cause error) error
	Extend(ctx context.Context, c inbox.Claim, lease time.Duration) (time.Time, error)
}

// DeadLetters records dead work and events delivered to nobody
// (deadletter.Store).
type DeadLetters interface {
	Record(ctx context.Context, l deadletter.Letter) error
	RecordPoison(ctx context.Context, l deadletter.Letter) error
	CountUnmatched(ctx context.Context, eventType string) error
}

var (
	_ Inbox       = (*inbox.Store)(nil)
	_ DeadLetters = (*deadletter.Store)(nil)
)

// Config configures a Worker.
// DefaultMaxReceiveCount is the maxReceiveCount of a queue's redrive
// policy when Config.MaxReceiveCount is zero.
const DefaultMaxReceiveCount = 5

type Config struct {
	// Queue, QueueURL and DLQURL: the events queue and its dead-letter
	// queue. Required.
	Queue    QueueAPI
	QueueURL string
	DLQURL   string
	// Inbox and DeadLetters are required.
	Inbox       Inbox
	DeadLetters DeadLetters
	// Subscriptions are matched with engine.Match on the DURABLE lane;
	// others are ignored. Each needs a Handler.
	Subscriptions []engine.Subscription
	// Declared reports whether the catalog declares an event type
	// (engine.Catalog.Declared). A declared type that no DURABLE
	// subscription matches is expected (com.order_created, say: its work,
	// if any, is on other lanes), so it is deleted with a debug log; only
	// undeclared types are logged as warnings and counted as unmatched.
	// Nil counts every type without a DURABLE match as unmatched.
	Declared func(eventType string) bool
	// WorkerID names this worker in inbox rows. Default host-pid-ulid.
	WorkerID string
	// MaxReceiveCount is the queue's redrive maxReceiveCount: a failure on
	// this receive is final. Default DefaultMaxReceiveCount.
	MaxReceiveCount int
	// WaitTime is the long-poll wait. Default 10s (SQS's maximum is 20s).
	WaitTime time.Duration
	// MaxMessages per receive, 1-10. Default 10.
	MaxMessages int
	// Pollers is the number of concurrent receive loops. Default 1.
	Pollers int
	// Lease is how long a claim holds before another worker may take it
	// over; it must be shorter than the queue's visibility timeout.
	// Default 30s.
	Lease time.Duration
	// Heartbeat is how often a running handler's lease and message
	// visibility are extended. Default Lease/3.
	Heartbeat time.Duration
	// RetryDelay, when positive, is the visibility set on a message after a
	// retryable failure (whole seconds, rounded up), for a shorter backoff
	// than the queue's visibility timeout. Default 0: leave it.
	RetryDelay time.Duration
	// ShutdownGrace is how long in-flight handlers may run after Run's
	// context ends before their contexts are cancelled. Default 10s.
	ShutdownGrace time.Duration
	// Logger defaults to slog.Default(); Observer to one doing nothing.
	Logger   *slog.Logger
	Observer Observer
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.Queue == nil || c.QueueURL == "" || c.DLQURL == "":
		return errors.New("worker config: Queue, QueueURL and DLQURL are required")
	case c.Inbox == nil || c.DeadLetters == nil:
		return errors.New("worker config: Inbox and DeadLetters are required")
	case c.MaxMessages < 0 || c.MaxMessages > 10:
		return fmt.Errorf("worker config: MaxMessages %d not in 1-10", c.MaxMessages)
	case c.WaitTime < 0 || c.WaitTime > 20*time.Second:
		return fmt.Errorf("worker config: WaitTime %v not in 0-20s", c.WaitTime)
	case c.Lease < 0 || c.Heartbeat < 0 || c.RetryDelay < 0 || c.Pollers < 0 || c.MaxReceiveCount < 0:
		return errors.New("worker config: negative value")
	case c.Heartbeat != 0 && c.Lease != 0 && c.Heartbeat >= c.Lease:
		return fmt.Errorf("worker config: Heartbeat %v must be shorter than Lease %v", c.Heartbeat, c.Lease)
	}
	for _, s := range c.Subscriptions {
		if s.Lane == engine.Durable && s.Handler == nil {
			return fmt.Errorf("worker config: durable subscription %q has no handler", s.Name)
		}
	}
	return nil
}

func (c *Config) defaults() {
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), ulid.Make().String()[20:])
	}
	if c.MaxReceiveCount == 0 {
		c.MaxReceiveCount = DefaultMaxReceiveCount
	}
	if c.WaitTime == 0 {
		c.WaitTime = 10 * time.Second
	}
	if c.MaxMessages == 0 {
		c.MaxMessages = 10
	}
	if c.Pollers == 0 {
		c.Pollers = 1
	}
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = c.Lease / 3
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
}
