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
// for concurrent use, as *sqs.Client is. Deletes and visibility changes go
// through the batch calls only (up to ten entries each).
type QueueAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
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

// Defaults of Config.
const (
	// DefaultMaxReceiveCount is the maxReceiveCount assumed when
	// Config.MaxReceiveCount is zero (see QueueMaxReceiveCount to read the
	// queue's own).
	DefaultMaxReceiveCount = 5
	// DefaultMaxAttempts is Config.MaxAttempts's default.
	DefaultMaxAttempts = 5
	// DefaultRetryBackoffBase and DefaultRetryBackoffMax are the defaults
	// of Config.RetryBackoffBase and RetryBackoffMax.
	DefaultRetryBackoffBase = time.Second
	DefaultRetryBackoffMax  = time.Minute
	// MaxHold is SQS's limit on how long one receive can keep a message
	// in flight: ChangeMessageVisibility cannot extend it past 12 hours
	// from the receive (docs/delivery.md, "The 12-hour bound").
	MaxHold = 12 * time.Hour
	// retryHoldShare is the share of MaxHold that the attempt budget of
	// one event may take at worst (Config.Validate); the rest is left to
	// the messages queued behind it and to infrastructure retries.
	retryHoldShare = 2
	// DefaultMaxRunTime is Config.MaxRunTime's default: longer than any
	// provider call of the cloud subscribers (10s timeouts) with room for
	// their retries, short enough that a hung handler frees its group.
	DefaultMaxRunTime = 2 * time.Minute
	// DefaultMaxInFlight is Config.MaxInFlight's default.
	DefaultMaxInFlight = 100
	// DefaultMaxParked is Config.MaxParked's default, in multiples of
	// MaxInFlight.
	DefaultMaxParked = 10
	// DefaultInfraBackoffBase and DefaultInfraBackoffMax are the defaults
	// of Config.InfraBackoffBase and InfraBackoffMax.
	DefaultInfraBackoffBase = 250 * time.Millisecond
	DefaultInfraBackoffMax  = 30 * time.Second
)

// Config configures a Worker.
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
	// MaxReceiveCount is the queue's redrive maxReceiveCount. It is a
	// safety net, not the retry budget (that is MaxAttempts): receives are
	// spent only by crashes, shutdowns, claims held by another worker and
	// holds that reach MaxHold. A failure on this receive is still final,
	// so that no message SQS would move to the DLQ next goes there without
	// its dead letter. Set the queue's count well above MaxAttempts'
	// receives (which is one). Default DefaultMaxReceiveCount.
	MaxReceiveCount int
	// MaxAttempts is the retry budget of one (event, subscription),
	// counted on its inbox row (the claim's Attempts), not on the
	// message's ApproximateReceiveCount: a retryable failure on the
	// MaxAttempts-th attempt is final. Retries run in place: the message,
	// and the rest of its group's lane, stay held (the keeper extends
	// their visibility) while the worker waits RetryBackoffBase*2^n (at
	// most RetryBackoffMax, with jitter) and claims again. A row already
	// past the budget when this worker first claims it (a redriven dead
	// row) gets MaxAttempts more. Default DefaultMaxAttempts.
	MaxAttempts int
	// RetryBackoffBase and RetryBackoffMax space the in-place retries of a
	// failed handler. MaxAttempts*(MaxRunTime+RetryBackoffMax) must stay
	// within half of MaxHold (Validate checks it), so the budget ends
	// before SQS's 12-hour limit does. Defaults DefaultRetryBackoffBase
	// and DefaultRetryBackoffMax.
	RetryBackoffBase time.Duration
	RetryBackoffMax  time.Duration
	// WaitTime is the long-poll wait. Default 10s (SQS's maximum is 20s).
	WaitTime time.Duration
	// MaxMessages per receive, 1-10. Default 10.
	MaxMessages int
	// Pollers is the number of concurrent receive loops. Default 1.
	Pollers int
	// MaxInFlight bounds the messages this worker holds at once: received
	// and not yet deleted or given back, whether being handled or queued
	// behind an earlier message of their group. Pollers receive only while
	// there is room. Default DefaultMaxInFlight; at least MaxMessages.
	MaxInFlight int
	// MaxParked bounds the messages held, beyond MaxInFlight, by lanes
	// that wait to retry a failed handler in place: such a lane moves its
	// message and the ones queued behind it off their slots while it
	// waits (when they fit), so a few tenants whose heads keep failing do
	// not fill the pool and hold up the others. Default DefaultMaxParked
	// times MaxInFlight; every held message, parked or not, has its
	// visibility kept.
	MaxParked int
	// MaxRunTime is the longest one handler run may take. At MaxRunTime
	// the handler's context is cancelled with cause ErrRunTimeExceeded and
	// its error counts as a retryable failure (or, on the last allowed
	// receive, as dead). Its lease is no longer extended; from
	// MaxRunTime+Heartbeat on, neither is the visibility of its message or
	// of the messages queued behind it, so SQS hands the group to another
	// receive even when the handler ignores its context. Default
	// DefaultMaxRunTime.
	MaxRunTime time.Duration
	// InfraBackoffBase and InfraBackoffMax space the retries of an inbox
	// or dead-letter write (or a DLQ send) that failed for an
	// infrastructure reason: throttling, 5xx, a timeout. The message stays
	// in flight, its visibility extended, and the write is retried after
	// min(Max, Base*2^n) (with jitter) until it succeeds or Run stops, so
	// an outage spends no receive. Defaults DefaultInfraBackoffBase and
	// DefaultInfraBackoffMax.
	InfraBackoffBase time.Duration
	InfraBackoffMax  time.Duration
	// Lease is how long a claim holds before another worker may take it
	// over; it must be shorter than the queue's visibility timeout.
	// Default 30s.
	Lease time.Duration
	// Heartbeat is how often a running handler's lease is extended, and
	// how often the visibility of the messages this worker holds is
	// checked and, when it is about to run out, extended (batched). Default
	// Lease/3.
	Heartbeat time.Duration
	// RetryDelay, when positive, is the visibility set on a message that
	// is given back unfinished (whole seconds, rounded up): one whose claim
	// another worker holds, or one whose retry was cut short by shutdown.
	// A failed handler is retried in place instead (MaxAttempts). Default
	// 0: the queue's visibility timeout.
	RetryDelay time.Duration
	// ShutdownGrace is how long in-flight handlers may run after Run's
	// context ends before their contexts are cancelled. Default 10s.
	ShutdownGrace time.Duration
	// Logger defaults to slog.Default(); Observer to NopObserver.
	Logger   *slog.Logger
	Observer Observer
}

// Validate checks the config; it does not change it.
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
	case c.Lease < 0 || c.Heartbeat < 0 || c.RetryDelay < 0 || c.Pollers < 0 || c.MaxReceiveCount < 0 ||
		c.MaxInFlight < 0 || c.MaxParked < 0 || c.MaxRunTime < 0 || c.InfraBackoffBase < 0 || c.InfraBackoffMax < 0 ||
		c.MaxAttempts < 0 || c.RetryBackoffBase < 0 || c.RetryBackoffMax < 0:
		return errors.New("worker config: negative value")
	case c.MaxInFlight != 0 && c.MaxInFlight < max(c.MaxMessages, 1):
		return fmt.Errorf("worker config: MaxInFlight %d below MaxMessages %d", c.MaxInFlight, c.MaxMessages)
	case c.Heartbeat != 0 && c.Lease != 0 && c.Heartbeat >= c.Lease:
		return fmt.Errorf("worker config: Heartbeat %v must be shorter than Lease %v", c.Heartbeat, c.Lease)
	}
	d := c
	d.setDefaults()
	if worst := time.Duration(d.MaxAttempts) * (d.MaxRunTime + d.RetryBackoffMax); worst > MaxHold/retryHoldShare {
		return fmt.Errorf("worker config: MaxAttempts %d x (MaxRunTime %v + RetryBackoffMax %v) = %v: %w",
			d.MaxAttempts, d.MaxRunTime, d.RetryBackoffMax, worst, ErrRetryPastHold)
	}
	for _, s := range c.Subscriptions {
		if s.Lane == engine.Durable && s.Handler == nil {
			return fmt.Errorf("worker config: durable subscription %q has no handler", s.Name)
		}
	}
	return nil
}

// setDefaults fills the zero fields with their defaults.
func (c *Config) setDefaults() {
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), ulid.Make().String()[20:])
	}
	if c.MaxReceiveCount == 0 {
		c.MaxReceiveCount = DefaultMaxReceiveCount
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryBackoffBase == 0 {
		c.RetryBackoffBase = DefaultRetryBackoffBase
	}
	if c.RetryBackoffMax == 0 {
		c.RetryBackoffMax = max(DefaultRetryBackoffMax, c.RetryBackoffBase)
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
	if c.MaxInFlight == 0 {
		c.MaxInFlight = max(DefaultMaxInFlight, c.MaxMessages)
	}
	if c.MaxParked == 0 {
		c.MaxParked = DefaultMaxParked * c.MaxInFlight
	}
	if c.MaxRunTime == 0 {
		c.MaxRunTime = DefaultMaxRunTime
	}
	if c.InfraBackoffBase == 0 {
		c.InfraBackoffBase = DefaultInfraBackoffBase
	}
	if c.InfraBackoffMax == 0 {
		c.InfraBackoffMax = DefaultInfraBackoffMax
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
		c.Observer = NopObserver{}
	}
}
