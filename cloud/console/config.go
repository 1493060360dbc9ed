package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/guard"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/engine/redrive"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Errors of the package.
var (
	// ErrNoOpsToken: a console without the ops token would let anyone in;
	// mount Disabled instead.
	ErrNoOpsToken = errors.New("console: ops token (BOWLINE_OPS_TOKEN) not set")
	// ErrConfig: a required Config field is missing; the message names it.
	ErrConfig = errors.New("console config")
)

// Defaults of Config.
const (
	DefaultRefresh     = 2 * time.Second
	DefaultVerifyEvery = 5 * time.Second
	DefaultSessionTTL  = 12 * time.Hour
	// DefaultMaxEventsPerTenant and DefaultMaxEventBytes bound the event
	// cache: the newest 5,000 events of each tenant, and 64 MiB
	// (estimated) in all, an eighth of the API task's 512 MB.
	DefaultMaxEventsPerTenant = 5_000
	DefaultMaxEventBytes      = 64 << 20
)

// DynamoDB is the part of the DynamoDB API the console reads with (events,
// inbox, app tables). It never writes.
type DynamoDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Chains lists tenants (from the heads index: one item per tenant, not a
// scan of the log) and verifies their chains (*engine.Verifier).
type Chains interface {
	HeadTenants(ctx context.Context) ([]string, error)
	VerifyChain(ctx context.Context, tenant string) (engine.ChainReport, error)
}

// DeadLetters reads dead letters (*deadletter.Store).
type DeadLetters interface {
	All(ctx context.Context) ([]deadletter.Letter, error)
	ForEvent(ctx context.Context, tenant, eventID string) ([]deadletter.Letter, error)
}

// Inbox reads one inbox row (*inbox.Store).
type Inbox interface {
	Get(ctx context.Context, eventID, subscription string) (inbox.Row, bool, error)
}

// Redriver moves events from the DLQ back to the events queue
// (*redrive.Redriver, built by cloud/app).
type Redriver interface {
	Run(ctx context.Context, opts redrive.Options) (redrive.Result, error)
}

// Unsettled counts a tenant's DURABLE work that reached no final state
// (engine/reconcile.InboxCheck). It reads every event of the tenant.
type Unsettled interface {
	Unsettled(ctx context.Context, tenant string) (int, error)
}

// Queues reads queue attributes (*sqs.Client).
type Queues interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// ProviderCall is one call an external provider received (or, in
// production, one call a provider reports): the console matches calls to
// events by their Idempotency-Key, "<event id>:<subscription>".
type ProviderCall struct {
	Provider       string    `json:"provider"`
	Method         string    `json:"method"`
	Path           string    `json:"path"`
	IdempotencyKey string    `json:"idempotency_key"`
	Status         int       `json:"status"`
	At             time.Time `json:"at"`
}

// OK reports whether the provider answered 2xx.
func (c ProviderCall) OK() bool { return c.Status >= 200 && c.Status <= 299 }

// ProviderCalls lists the calls providers received. `bowline dev` adapts
// its fake providers; without it the console shows inbox states only.
type ProviderCalls interface {
	ProviderCalls(ctx context.Context) ([]ProviderCall, error)
}

// Agent is one edge agent whose local status endpoint this process can
// reach (`bowline dev` runs them; in production gateways are remote and
// the list is usually empty).
type Agent struct {
	Thing     string
	Tenant    string
	StatusURL string // "http://host:port", serving /status
}

// QueueURLs are the queues the pipeline page reads (cloud/app resolves
// them).
type QueueURLs struct {
	Events, DLQ, RecordChanges string
}

// Config configures a Console. cloud/app fills everything from its App.
type Config struct {
	// OpsToken is the operator's token (BOWLINE_OPS_TOKEN). Required.
	OpsToken string
	// Names give the tables and the telemetry stream. Required.
	Names resources.Names
	// DB reads the events, inbox and app tables. Required.
	DB DynamoDB
	// Chains, DeadLetters, Inbox and Redriver are the engine's. Required.
	Chains      Chains
	DeadLetters DeadLetters
	Inbox       Inbox
	Redriver    Redriver
	// Unsettled, when set, adds each tenant's unsettled work.
	Unsettled Unsettled
	// Subscriptions are the catalog's: the DURABLE ones are the work each
	// event owes. Required.
	Subscriptions []engine.Subscription
	// Queue and QueueURLs give queue depths. Required.
	Queue     Queues
	QueueURLs QueueURLs
	// Rollups reads the bowls' telemetry rollups from the telemetry_state
	// table (cloud/durable.ReadRollups; a *dynamodb.Client). Required.
	Rollups durable.RollupReader
	// NoTelemetry leaves the rollups alone (the weight charts stay empty).
	NoTelemetry bool
	// Gatherer is this process's Prometheus registry: the pipeline's rates
	// come from it. Default: no metrics (stages show "not in this process").
	Gatherer prometheus.Gatherer
	// Agents are the edge agents to poll; Calls the providers' calls.
	// Both optional.
	Agents []Agent
	Calls  ProviderCalls
	// SimClock, when set, is the simulated clock of `bowline dev`, shown
	// in the header.
	SimClock func() time.Time
	// Refresh is the period of the background reads and of the pages'
	// live updates; default DefaultRefresh. VerifyEvery is the period of
	// chain verification; default DefaultVerifyEvery.
	Refresh     time.Duration
	VerifyEvery time.Duration
	// SessionTTL is how long a login lasts; default DefaultSessionTTL.
	SessionTTL time.Duration
	// MaxEventsPerTenant and MaxEventBytes bound the in-memory event cache
	// the pages read (the newest events of each tenant are kept); default
	// DefaultMaxEventsPerTenant and DefaultMaxEventBytes. An event page
	// reads its row from DynamoDB whatever the cache holds.
	MaxEventsPerTenant int
	MaxEventBytes      int64
	// OneClickLogin lets GET /console/login?token=<ops token> log in (the
	// link bowline dev prints). Off by default: a token in a URL ends up
	// in history, logs and proxies; production logs in with the form.
	OneClickLogin bool
	// Guard counts failed logins per client address and tells whether the
	// client used HTTPS behind the trusted proxy (cloud/guard): the cookie
	// is Secure and HSTS is sent only then. Default: a Guard that trusts
	// no proxy. Share the API's so one source has one count.
	Guard *guard.Guard
	// Logger defaults to slog.Default(); Now to time.Now.
	Logger *slog.Logger
	Now    func() time.Time
}

// Validate reports the first missing or invalid field; it changes
// nothing (New fills the defaults first, setDefaults).
func (c *Config) Validate() error {
	if c.OpsToken == "" {
		return ErrNoOpsToken
	}
	missing := func(what string) error { return fmt.Errorf("%w: %s is required", ErrConfig, what) }
	switch {
	case c.Names.Stack == "":
		return missing("Names")
	case c.DB == nil:
		return missing("DB")
	case c.Chains == nil:
		return missing("Chains")
	case c.DeadLetters == nil:
		return missing("DeadLetters")
	case c.Inbox == nil:
		return missing("Inbox")
	case c.Redriver == nil:
		return missing("Redriver")
	case c.Queue == nil || c.QueueURLs.Events == "" || c.QueueURLs.DLQ == "":
		return missing("Queue and the events and DLQ URLs")
	case c.Rollups == nil:
		return missing("Rollups")
	case len(c.Subscriptions) == 0:
		return missing("Subscriptions")
	case c.Refresh < 0 || c.VerifyEvery < 0 || c.SessionTTL < 0 || c.MaxEventsPerTenant < 0 || c.MaxEventBytes < 0:
		return fmt.Errorf("%w: Refresh, VerifyEvery, SessionTTL, MaxEventsPerTenant and MaxEventBytes must not be negative", ErrConfig)
	}
	return nil
}

// setDefaults fills the zero fields that have a default: the limits,
// Logger, Now and a Guard of its own.
func (c *Config) setDefaults() error {
	if c.MaxEventsPerTenant == 0 {
		c.MaxEventsPerTenant = DefaultMaxEventsPerTenant
	}
	if c.MaxEventBytes == 0 {
		c.MaxEventBytes = DefaultMaxEventBytes
	}
	if c.Refresh == 0 {
		c.Refresh = DefaultRefresh
	}
	if c.VerifyEvery == 0 {
		c.VerifyEvery = DefaultVerifyEvery
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Guard == nil {
		g, err := guard.New(guard.Config{Logger: c.Logger})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		c.Guard = g
	}
	return nil
}

// The engine's stores and the SDK clients satisfy the interfaces above.
var (
	_ DynamoDB             = (*dynamodb.Client)(nil)
	_ Chains               = (*engine.Verifier)(nil)
	_ DeadLetters          = (*deadletter.Store)(nil)
	_ Inbox                = (*inbox.Store)(nil)
	_ Redriver             = (*redrive.Redriver)(nil)
	_ Queues               = (*sqs.Client)(nil)
	_ durable.RollupReader = (*dynamodb.Client)(nil)
)
