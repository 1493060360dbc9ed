package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// DynamoDB is the part of the DynamoDB API the engine uses. *dynamodb.Client
// satisfies it; tests and benchmarks wrap it (to count calls) or fake it.
// Implementations must be safe for concurrent use.
type DynamoDB interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ DynamoDB = (*dynamodb.Client)(nil)

// Observer is told about every committed group and every failed emit; the
// Prometheus metrics (NewMetrics) implement it. Calls come from many
// goroutines and must not block. Embed NopObserver to observe only some
// calls.
type Observer interface {
	// Committed reports one transaction that committed events events for
	// tenant after attempts attempts, taking elapsed in total.
	Committed(tenant string, events, attempts int, elapsed time.Duration)
	// Failed reports one emit that returned err.
	Failed(tenant, typ string, err error)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Committed(string, int, int, time.Duration) {}
func (NopObserver) Failed(string, string, error)              {}

// DynamoDB's transaction limits.
const (
	// MaxTransactItems is the most actions one TransactWriteItems holds.
	MaxTransactItems = 100
	// MaxTransactBytes is the aggregate size limit of one transaction (4 MB),
	// less a margin for the engine's own estimate.
	MaxTransactBytes = 4_000_000
	// MaxWritesPerEvent is the most caller writes one event can carry: the
	// transaction also holds the head row, the event row and a dedup row.
	MaxWritesPerEvent = MaxTransactItems - 3
)

// Config configures an Engine. Zero durations and sizes take the defaults
// documented on each field.
type Config struct {
	// Client talks to DynamoDB. Required.
	Client DynamoDB
	// EventsTable holds chain heads and event rows
	// (resources.Names.EventsTable). Required.
	EventsTable string
	// InboxTable holds idempotency (dedup) rows (resources.Names.InboxTable).
	// Required.
	InboxTable string
	// Catalog declares the types Emit accepts; its INLINE and LOCAL
	// subscriptions with a Handler are run by Emit. Required (at least one
	// type).
	Catalog Catalog
	// Logger receives LOCAL handler errors and retries; default slog.Default().
	Logger *slog.Logger
	// Observer is told about commits and failures (Metrics); default
	// NopObserver.
	Observer Observer

	// MaxPayloadBytes bounds an event's canonical JSON payload; default
	// 256 KiB (a DynamoDB item is at most 400 KB).
	MaxPayloadBytes int
	// MaxGroupEvents bounds how many events one group commit chains into a
	// transaction; default 32. The 100-action and 4 MB limits also apply.
	MaxGroupEvents int
	// DedupTTL is how long an idempotency key is remembered; default 30 days.
	DedupTTL time.Duration
	// DefaultTimeout bounds an Emit whose context has no deadline; default
	// 30 s. Conflicts and throttling are retried until the deadline.
	DefaultTimeout time.Duration
	// CallTimeout bounds one DynamoDB call; default 10 s. A call that times
	// out is retried with the same ClientRequestToken, so it commits once.
	CallTimeout time.Duration
	// BackoffBase and BackoffMax shape the full-jitter exponential backoff
	// between conflicting attempts; defaults 5 ms and 500 ms.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// MaxIdleTenants bounds the idle tenants whose queue and cached head
	// the engine keeps (one small entry each); default 10,000. A tenant
	// idle past the bound is forgotten when its committer exits, and its
	// next emit reads its head again (one GetItem). A long-running task
	// emitting for a whole fleet's tenants thus holds at most this many
	// idle entries plus the tenants emitting at the moment.
	MaxIdleTenants int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Validate reports the first missing or invalid field.
func (c Config) Validate() error {
	switch {
	case c.Client == nil:
		return errors.New("engine config: Client is nil")
	case c.EventsTable == "":
		return errors.New("engine config: EventsTable is empty")
	case c.InboxTable == "":
		return errors.New("engine config: InboxTable is empty")
	case len(c.Catalog.Types) == 0:
		return errors.New("engine config: Catalog declares no event types")
	case c.MaxPayloadBytes < 0 || c.MaxPayloadBytes > 350_000:
		return fmt.Errorf("engine config: MaxPayloadBytes %d: want 0 (default) to 350000", c.MaxPayloadBytes)
	case c.MaxGroupEvents < 0 || c.MaxGroupEvents > (MaxTransactItems-1)/2:
		return fmt.Errorf("engine config: MaxGroupEvents %d: want 0 (default) to %d", c.MaxGroupEvents, (MaxTransactItems-1)/2)
	case c.MaxIdleTenants < 0:
		return fmt.Errorf("engine config: MaxIdleTenants %d: want 0 (default) or more", c.MaxIdleTenants)
	case c.DedupTTL < 0, c.DefaultTimeout < 0, c.CallTimeout < 0, c.BackoffBase < 0, c.BackoffMax < 0:
		return errors.New("engine config: negative duration")
	}
	for _, s := range c.Catalog.Subscriptions {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("engine config: %w", err)
		}
	}
	return nil
}

// setDefaults fills the zero fields with their defaults.
func (c *Config) setDefaults() {
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxPayloadBytes == 0 {
		c.MaxPayloadBytes = 256 << 10
	}
	if c.MaxGroupEvents == 0 {
		c.MaxGroupEvents = 32
	}
	if c.DedupTTL == 0 {
		c.DedupTTL = 30 * 24 * time.Hour
	}
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = 30 * time.Second
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 10 * time.Second
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = 5 * time.Millisecond
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 500 * time.Millisecond
	}
	if c.MaxIdleTenants == 0 {
		c.MaxIdleTenants = 10_000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}
