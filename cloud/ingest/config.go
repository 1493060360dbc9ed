package ingest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
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
	// Broker is the MQTT broker URL (tcp://host:port, ssl://host:8883).
	// Required.
	Broker string
	// ClientID fixes the MQTT client id, with no lease: only for a single
	// process that always comes back under the same id (tests, bowline dev,
	// benches). Leave it empty in production: then the process leases one
	// of Slots client ids (docs/ingest-sessions.md), so a replaced process's
	// persistent session is resumed by its successor. Set ClientID or
	// Slots, not both.
	ClientID string
	// Slots is the number of client-id slots ("<Group>-<n>", n < Slots)
	// the group's processes lease from the app table when ClientID is
	// empty; set it to the number of ingest processes that run at once.
	// Default 1.
	Slots int
	// LeaseTTL is how long a slot lease lasts without renewal: a killed
	// process's slot (and session) is taken over after at most this long;
	// the holder renews every LeaseTTL/4 and stops consuming when it could
	// not renew for 3/4 of it. Default 30 s.
	LeaseTTL time.Duration
	// Owner names this process in its lease row; default
	// "<hostname>-<pid>-<random>", distinct per process.
	Owner string
	// Group is the shared-subscription group; default DefaultGroup of
	// Names.Stack, so two stacks in one account never share a group or
	// client ids (a message handed to the other stack's ingest would be
	// acknowledged there and refused as an unknown thing).
	Group string
	// Username, Password and TLS authenticate to the broker; optional.
	Username, Password string
	TLS                *tls.Config

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
	// gaps that are due; default 5 s. (Observed seqs are written before
	// their messages are acknowledged, not on this interval.)
	GapFlushInterval time.Duration
	// GapMaxSpans bounds the spans kept per thing: past it the
	// oldest holes are merged away (counted in the row, never raised), so
	// a row stays far below DynamoDB's 400 KB item limit. Default 1000.
	GapMaxSpans int
	// RegistryTTL is how long a device's tenant is cached; default 1 min.
	RegistryTTL time.Duration
	// DrainTimeout bounds the graceful shutdown: messages in progress get
	// this long to become durable and be acknowledged; default 15 s.
	DrainTimeout time.Duration
	// RetryMax caps the backoff between retries of a transient DynamoDB
	// failure while a message is held; default 5 s.
	RetryMax time.Duration
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
	// ReceiveClock is the clock a gateway's timestamps are judged and
	// corrected against (docs/clock.md); default Now. bowline dev sets its
	// simulated clock here, since its gateways stamp simulated time.
	ReceiveClock func() time.Time
}

// Validate fills defaults and reports the first invalid field.
func (c *Config) Validate() error {
	if c.Broker == "" {
		return errors.New("ingest: Broker is required")
	}
	if c.Group == "" && c.Names.Stack != "" {
		c.Group = DefaultGroup(c.Names.Stack)
	}
	switch {
	case c.ClientID != "" && c.Slots != 0:
		return fmt.Errorf("ingest: set ClientID (%q, a fixed id) or Slots (%d, leased ids), not both", c.ClientID, c.Slots)
	case c.Slots < 0:
		return fmt.Errorf("ingest: Slots is %d; want at least 1", c.Slots)
	case c.ClientID == "" && c.Slots == 0:
		c.Slots = 1
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 30 * time.Second
	}
	if c.LeaseTTL < 0 {
		return fmt.Errorf("ingest: LeaseTTL is %s; want a positive duration", c.LeaseTTL)
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "local"
		}
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.Owner = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	switch {
	case c.Names.Stack == "":
		return errors.New("ingest: Names is required")
	case c.DynamoDB == nil || c.Emitter == nil:
		return errors.New("ingest: DynamoDB and Emitter are required (cloud/app's App.Ingest gives them)")
	}
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
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 15 * time.Second
	}
	if c.RetryMax == 0 {
		c.RetryMax = 5 * time.Second
	}
	if c.MaxPayload < 0 || c.MaxFutureSkew < 0 || c.GapGrace < 0 || c.GapFlushInterval < 0 || c.RegistryTTL < 0 || c.GapMaxSpans < 0 || c.DrainTimeout < 0 || c.RetryMax < 0 {
		return errors.New("ingest: sizes and durations must not be negative")
	}
	if err := c.Rejections.validate(); err != nil {
		return err
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
	if c.ReceiveClock == nil {
		c.ReceiveClock = c.Now
	}
	return checkCatalog()
}

func (c *Config) limits() Limits {
	return Limits{MaxPayload: c.MaxPayload, MaxFutureSkew: c.MaxFutureSkew}
}

// DefaultGroup is the shared-subscription group of stack's ingest,
// bowline-<stack>-ingest; its leased client ids are <group>-<slot>
// (the ingest IoT policy of the template allows exactly these).
func DefaultGroup(stack string) string { return "bowline-" + stack + "-ingest" }
