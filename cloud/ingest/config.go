package ingest

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Emitter emits engine events; *engine.Engine is one. It must be safe for
// concurrent use and honour engine.Event.IdempotencyKey, returning an error
// matching engine.ErrDuplicate (a *engine.DuplicateError) for a repeated key.
type Emitter interface {
	EmitEvent(ctx context.Context, ev engine.Event) (engine.Envelope, error)
}

var _ Emitter = (*engine.Engine)(nil)

// DynamoAPI is the DynamoDB client ingest needs for the engine, the device
// registry, dead letters, digest rows and seq tracking; *dynamodb.Client is
// one. It must be safe for concurrent use.
type DynamoAPI interface {
	engine.DynamoDB
	deadletter.DynamoAPI
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Config configures an Ingester. Zero fields take the documented defaults.
type Config struct {
	// Names selects the tables. Required.
	Names resources.Names
	// DynamoDB is the client and Emitter the process's one engine
	// (cloud/app's App.Ingest fills both). Required; the caller closes the
	// engine after Run returns.
	DynamoDB DynamoAPI
	Emitter  Emitter

	// MaxPayload bounds a message; default wire.MaxPayload (131072, AWS IoT
	// Core's 128 KB).
	MaxPayload int
	// MaxFutureSkew is how far after receipt a timestamp may lie; default 5 min.
	MaxFutureSkew time.Duration
	// GapGrace is how long a hole in a thing's event seqs may stay open before
	// bowl.data_gap is raised; default 2 min.
	GapGrace time.Duration
	// GapFlushInterval is how often the lanes with holes are checked for
	// gaps that are due (by HandleRecords, and by Run between batches);
	// default 5 s. (Observed seqs are written before a batch is done, not
	// on this interval.)
	GapFlushInterval time.Duration
	// GapMaxSpans bounds the spans kept per thing: past it the
	// oldest holes are merged away (counted in the row, never raised), so
	// a row stays far below DynamoDB's 400 KB item limit. Default 1000.
	GapMaxSpans int
	// RegistryTTL is how long a device's tenant is cached; default 1 min.
	RegistryTTL time.Duration
	// RetryMax caps the backoff between retries of a transient DynamoDB
	// failure while a record is held; default 5 s.
	RetryMax time.Duration
	// HoldFor bounds how long one record is retried in place on transient
	// failures before HandleRecords reports it failed and the event source
	// retries it with its own backoff; default 20 s.
	HoldFor time.Duration
	// Concurrency bounds the things of one batch handled at once; default 32.
	Concurrency int
	// Rejections bounds what rejected messages may cost: dead letters per
	// device, how long a rejection is held when its dead letter cannot be
	// written, the unknown-thing cache (reject.go; defaults there).
	Rejections RejectionConfig

	// Logger; default slog.Default().
	Logger *slog.Logger
	// Observer is told about messages (metrics, tests); default NopObserver.
	Observer Observer
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ReceiveClock, when set, is the clock a gateway's timestamps are
	// judged and corrected against (docs/clock.md); by default it is when
	// the rules engine received the message (the record's received_at).
	// bowline dev sets its simulated clock here, since its gateways stamp
	// simulated time.
	ReceiveClock func() time.Time
}

// setDefaults fills the zero fields with their defaults.
func (c *Config) setDefaults() {
	if c.MaxPayload == 0 {
		c.MaxPayload = wire.MaxPayload
	}
	if c.MaxFutureSkew == 0 {
		c.MaxFutureSkew = 5 * time.Minute
	}
	if c.GapGrace == 0 {
		c.GapGrace = 2 * time.Minute
	}
	if c.GapFlushInterval == 0 {
		c.GapFlushInterval = 5 * time.Second
	}
	if c.GapMaxSpans == 0 {
		c.GapMaxSpans = 1000
	}
	if c.RegistryTTL == 0 {
		c.RegistryTTL = time.Minute
	}
	if c.HoldFor == 0 {
		c.HoldFor = 20 * time.Second
	}
	if c.Concurrency == 0 {
		c.Concurrency = 32
	}
	if c.RetryMax == 0 {
		c.RetryMax = 5 * time.Second
	}
	c.Rejections.setDefaults()
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate checks the configuration; it does not change it.
func (c Config) Validate() error {
	switch {
	case c.Names.Stack == "":
		return errors.New("ingest: Names is required")
	case c.DynamoDB == nil || c.Emitter == nil:
		return errors.New("ingest: DynamoDB and Emitter are required (cloud/app's App.Ingest gives them)")
	}
	if c.MaxPayload < 0 || c.MaxFutureSkew < 0 || c.GapGrace < 0 || c.GapFlushInterval < 0 || c.RegistryTTL < 0 || c.GapMaxSpans < 0 || c.HoldFor < 0 || c.RetryMax < 0 || c.Concurrency < 0 {
		return errors.New("ingest: sizes and durations must not be negative")
	}
	if err := c.Rejections.validate(); err != nil {
		return err
	}
	return checkCatalog()
}

func (c *Config) limits() Limits {
	return Limits{MaxPayload: c.MaxPayload, MaxFutureSkew: c.MaxFutureSkew}
}
