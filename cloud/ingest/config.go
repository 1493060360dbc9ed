package ingest

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/cloud/telemetry"
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
	// Broker is the MQTT broker URL (tcp://host:port, ssl://host:8883).
	// Required.
	Broker string
	// ClientID is the MQTT client id; its persistent session holds the
	// messages this process has not acknowledged, so keep it stable and
	// distinct per ingest process. Default "bowline-ingest-<hostname>".
	ClientID string
	// Group is the shared-subscription group; default "bowline-ingest".
	Group string
	// Username, Password and TLS authenticate to the broker; optional.
	Username, Password string
	TLS                *tls.Config

	// Names selects the tables and stream. Required.
	Names resources.Names
	// DynamoDB and Kinesis are the clients, and Emitter the process's one
	// engine (cloud/app's App.Ingest fills all three). Required; the
	// caller closes the engine after Run returns.
	DynamoDB DynamoAPI
	Kinesis  telemetry.KinesisAPI
	Emitter  Emitter

	// Producer tunes the Kinesis batching (Stream is filled from Names).
	Producer telemetry.ProducerConfig

	// MaxPayload bounds a message; default wire.MaxPayload (131072, AWS IoT
	// Core's 128 KB).
	MaxPayload int
	// MaxSamples bounds the samples of one telemetry message; default 10000.
	MaxSamples int
	// MaxFutureSkew is how far after receipt a timestamp may lie; default 5 min.
	MaxFutureSkew time.Duration
	// GapGrace is how long a hole in a thing's seqs may stay open before
	// bowl.data_gap is raised; default 2 min.
	GapGrace time.Duration
	// GapFlushInterval is how often observed seqs are merged into the app
	// table and holes checked; default 5 s.
	GapFlushInterval time.Duration
	// RegistryTTL is how long a device's tenant is cached; default 1 min.
	RegistryTTL time.Duration
	// DrainTimeout bounds the graceful shutdown: messages in progress get
	// this long to become durable and be acknowledged; default 15 s.
	DrainTimeout time.Duration
	// RetryMax caps the backoff between retries of a transient DynamoDB
	// failure while a message is held; default 5 s.
	RetryMax time.Duration

	// Logger; default slog.Default().
	Logger *slog.Logger
	// Observer is told about messages (metrics, tests); default NopObserver.
	Observer Observer
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Validate fills defaults and reports the first invalid field.
func (c *Config) Validate() error {
	if c.Broker == "" {
		return errors.New("ingest: Broker is required")
	}
	if c.ClientID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "local"
		}
		c.ClientID = "bowline-ingest-" + host
	}
	if c.Group == "" {
		c.Group = "bowline-ingest"
	}
	switch {
	case c.Names.Stack == "":
		return errors.New("ingest: Names is required")
	case c.DynamoDB == nil || c.Kinesis == nil || c.Emitter == nil:
		return errors.New("ingest: DynamoDB, Kinesis and Emitter are required (cloud/app's App.Ingest gives them)")
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = wire.MaxPayload
	}
	if c.MaxSamples == 0 {
		c.MaxSamples = 10000
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
	if c.RegistryTTL == 0 {
		c.RegistryTTL = time.Minute
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 15 * time.Second
	}
	if c.RetryMax == 0 {
		c.RetryMax = 5 * time.Second
	}
	if c.MaxPayload < 0 || c.MaxSamples < 0 || c.MaxFutureSkew < 0 || c.GapGrace < 0 || c.GapFlushInterval < 0 || c.RegistryTTL < 0 || c.DrainTimeout < 0 || c.RetryMax < 0 {
		return errors.New("ingest: sizes and durations must not be negative")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Producer.Stream = c.Names.TelemetryStream()
	if c.Producer.Logger == nil {
		c.Producer.Logger = c.Logger
	}
	if err := c.Producer.Validate(); err != nil {
		return err
	}
	return checkCatalog()
}

func (c *Config) limits() Limits {
	return Limits{MaxPayload: c.MaxPayload, MaxSamples: c.MaxSamples, MaxFutureSkew: c.MaxFutureSkew}
}
