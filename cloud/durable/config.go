package durable

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
)

// Publisher publishes an MQTT message to a gateway (the AWS IoT data
// plane's Publish in AWS, the local broker under `bowline dev`). It must be
// safe for concurrent use and return when ctx ends. The consumer publishes
// acknowledgements with qos 0: they repeat, so a lost one only delays.
type Publisher interface {
	Publish(ctx context.Context, topic string, payload []byte, qos int) error
}

// Emitter emits an event through the engine; *engine.Engine is one. An
// event whose idempotency key was emitted before returns an error matching
// engine.ErrDuplicate, which the consumer counts as emitted.
type Emitter interface {
	EmitEvent(ctx context.Context, ev engine.Event) (engine.Envelope, error)
}

var _ Emitter = (*engine.Engine)(nil)

// Devices answers which tenant a thing is registered to; *devices.Cache is
// one (the composition root passes a cache, not the registry: every record
// looks its things up). An unregistered thing is an error matching
// devices.ErrUnknownDevice; any other error is an outage and the record is
// retried.
type Devices interface {
	Lookup(ctx context.Context, thing string) (devices.Device, error)
}

var _ Devices = (*devices.Cache)(nil)

// DynamoAPI is the part of the DynamoDB client the consumer uses for its
// state and rollup rows; *dynamodb.Client is one. It must be safe for
// concurrent use.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Defaults of Config (docs/cost.md says why these numbers).
const (
	// DefaultAckEvery is AckEvery's default. The gateways' default
	// resend timeout (wire.DefaultAckTimeout, 45 min) must stay longer
	// than it plus a batch interval; the margin between them (14 min) is
	// how far the consumer may lag before gateways resend (docs/cost.md).
	DefaultAckEvery = 30 * time.Minute
	// DefaultGapGrace is GapGrace's default, 96 min: two of the
	// gateways' default resend timeouts (wire.DefaultAckTimeout) and six
	// batch intervals, so a batch whose resend is lost too is filled by
	// the second resend before it is reported. A false bowl.data_gap
	// cannot be taken back (it is in the tenant's chain), a true one
	// reported late costs nothing (the data is gone either way).
	// The second resend comes at most two timeouts and a batch interval
	// after the hole opened on the outbox's clock, or two timeouts and
	// one GapStep (4 min) when an outage delayed it; 2 min are left
	// (docs/telemetry-path.md, "Gaps"). It is also how late, in the
	// gateway's sending time, a telemetry bowl.data_gap comes.
	DefaultGapGrace = 2*wire.DefaultAckTimeout + 6*wire.DefaultBatchInterval
	// gapStepsPerGrace makes GapStep's default: GapGrace / 24, 4 min at
	// the default grace.
	gapStepsPerGrace = 24
	// DefaultRollupEvery is DefaultConfig's RollupEvery.
	DefaultRollupEvery = 30 * time.Minute
	// DefaultRegistryTTL is RegistryTTL's default.
	DefaultRegistryTTL = 10 * time.Minute
)

// DefaultConfig returns a Config with every default set, RollupEvery
// included; fill in the dependencies.
func DefaultConfig() Config {
	c := Config{RollupEvery: DefaultRollupEvery}
	c.setDefaults()
	return c
}

// Config configures a Consumer. Zero fields take the defaults named,
// except RollupEvery (DefaultConfig).
type Config struct {
	// DB and Table hold the state and rollup rows
	// (resources.Names.TelemetryTable). Required.
	DB    DynamoAPI
	Table string
	// Devices is the device registry (a *devices.Cache). Required.
	Devices Devices
	// Letters records rejected records (a *deadletter.Store on the
	// dead_letters table). Required.
	Letters LetterStore
	// Publisher publishes acknowledgements. Required.
	Publisher Publisher
	// Emitter raises bowl.data_gap (the engine). Required.
	Emitter Emitter

	// AckEvery is the longest a gateway waits for an acknowledgement of
	// new durable seqs, and the shortest time between two of its acks;
	// default DefaultAckEvery, 30 min (`bowline dev` uses seconds). The
	// gateway's resend timeout (edge/forward AckTimeout, default
	// wire.DefaultAckTimeout, 45 min) must be longer than AckEvery plus a
	// batch interval.
	AckEvery time.Duration
	// GapGrace is how long, on the gateway's clock, a hole between the
	// seqs of one (outbox, thing) may stay open before bowl.data_gap is
	// raised; default DefaultGapGrace, 96 min: two of the gateway's
	// resend timeouts and a margin, so a lost resend is not reported.
	// Set it to at least twice the gateways' ack_timeout and one GapStep.
	// Only time the gateway spent sending counts (GapStep).
	GapGrace time.Duration
	// GapStep is the most one step of an outbox's clock, from the
	// sent_at of one of its batches to the next, adds to the age of its
	// holes: a gateway that sent nothing for longer was offline or had
	// its broker down, so it could not resend, and an outage counts as
	// at most GapStep (docs/telemetry-path.md, "Gaps"). Default
	// GapGrace/24 (4 min at the default grace): four of the gateway's
	// batch intervals (wire.DefaultBatchInterval, 1 min), so steady
	// traffic, reconnects included, counts in full; and inside the
	// default grace's margin over two resend timeouts (6 min), so an
	// outage just before a resend is not reported either.
	GapStep time.Duration
	// RollupEvery is the length of a rollup window: a bowl's minutes of
	// one window go to DynamoDB as one row, written once, RollupSlack
	// after the window ends (docs/cost.md). It divides an hour. 0 writes
	// what came in at the end of every call of Handle (what `bowline
	// dev` uses), so it is the one field Validate does not default:
	// DefaultConfig sets it to DefaultRollupEvery, 30 min.
	RollupEvery time.Duration
	// MaxAhead is how far a gateway's sent_at may lie after the rule's
	// received_at before its times are corrected; default 5 min
	// (cloud/ingest's MaxFutureSkew).
	MaxAhead time.Duration
	// RegistryTTL is how long the composition root's cache of the device
	// registry (cloud/app builds a devices.Cache for Devices) serves a
	// thing's tenant: a thing moved to another tenant or deregistered is
	// still accepted for up to this long. Default DefaultRegistryTTL,
	// 10 min: at 1 min, the cache's own default, a gateway's batch a
	// minute finds its bowls expired every time (docs/cost.md).
	RegistryTTL time.Duration
	// CallTimeout bounds every AWS call (DynamoDB, the registry, the
	// publisher, the engine), so one hung call cannot stall every ack;
	// default 5 s.
	CallTimeout time.Duration

	// MaxSpans bounds the seq spans kept per (outbox, thing); default 64.
	// Past it the oldest spans are forgotten (acknowledging less).
	MaxSpans int
	// MaxOutboxes bounds the outbox ids kept per gateway, the most recent
	// first; default 4.
	MaxOutboxes int
	// MaxThings bounds the things kept per outbox; default 256.
	MaxThings int
	// MaxGateways bounds the gateways whose state this process caches
	// (least recently used go first); default 10000.
	MaxGateways int
	// MaxBowls bounds the bowls whose rollups this process holds (least
	// recently used are written and dropped first); default 10000.
	MaxBowls int

	// Rejections bounds dead letters.
	Rejections RejectionConfig

	// Observer is told what happens; default none (Metrics is one).
	Observer Observer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the wall clock (ack cadence, rollup cadence, letter times,
	// TTLs); default time.Now.
	Now func() time.Time
}

// RejectionConfig bounds what rejected records may cost
// (docs/dead-letters.md). Zero fields take their defaults.
type RejectionConfig struct {
	// PerGateway is how many dead letters one authenticated gateway may
	// write per Window; default 20. The next rejection in the window
	// writes one summary letter, the rest are counted only.
	PerGateway int
	// Window is the rate-limit window; default 1 min.
	Window time.Duration
	// CacheSize bounds the gateways rate-limited at once; default 10000.
	CacheSize int
}

// Validate checks c; it does not change it.
func (c Config) Validate() error {
	switch {
	case c.DB == nil || c.Table == "":
		return fmt.Errorf("%w: DB and Table are required", ErrConfig)
	case c.Devices == nil:
		return fmt.Errorf("%w: Devices is required", ErrConfig)
	case c.Letters == nil:
		return fmt.Errorf("%w: Letters is required", ErrConfig)
	case c.Publisher == nil:
		return fmt.Errorf("%w: Publisher is required", ErrConfig)
	case c.Emitter == nil:
		return fmt.Errorf("%w: Emitter is required", ErrConfig)
	}
	if c.AckEvery < 0 || c.GapGrace < 0 || c.GapStep < 0 || c.RegistryTTL < 0 || c.RollupEvery < 0 || c.MaxAhead < 0 || c.CallTimeout < 0 || c.MaxSpans < 0 || c.MaxOutboxes < 0 || c.MaxThings < 0 ||
		c.MaxGateways < 0 || c.MaxBowls < 0 || c.Rejections.PerGateway < 0 || c.Rejections.Window < 0 || c.Rejections.CacheSize < 0 {
		return fmt.Errorf("%w: durations and sizes must not be negative", ErrConfig)
	}
	if c.RollupEvery > maxRollupWindow || (c.RollupEvery > 0 && maxRollupWindow%c.RollupEvery != 0) {
		return fmt.Errorf("%w: RollupEvery %v must divide an hour", ErrConfig, c.RollupEvery)
	}
	return nil
}

// setDefaults fills in zero fields.
func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n == 0 {
			*n = v
		}
	}
	def(&c.AckEvery, DefaultAckEvery)
	def(&c.RegistryTTL, DefaultRegistryTTL)
	def(&c.GapGrace, DefaultGapGrace)
	def(&c.GapStep, max(c.GapGrace/gapStepsPerGrace, time.Nanosecond))
	def(&c.MaxAhead, 5*time.Minute)
	def(&c.CallTimeout, 5*time.Second)
	def(&c.Rejections.Window, time.Minute)
	defInt(&c.MaxSpans, 64)
	defInt(&c.MaxOutboxes, 4)
	defInt(&c.MaxThings, 256)
	defInt(&c.MaxGateways, 10000)
	defInt(&c.MaxBowls, 10000)
	defInt(&c.Rejections.PerGateway, 20)
	defInt(&c.Rejections.CacheSize, 10000)
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}
