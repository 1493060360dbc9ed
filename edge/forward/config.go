package forward

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Config configures a Forwarder. Zero fields take the documented defaults.
type Config struct {
	// Broker is the broker URL: tcp://host:port, ssl://host:8883 (TLS) or
	// mqtts://host:8883. Required.
	Broker string
	// Tenant is the topics' tenant segment, a wire.ValidName. Required.
	Tenant string
	// Thing names the gateway itself, a wire.ValidName: the last will goes
	// to its status topic. Default: ClientID.
	Thing string
	// ClientID is the MQTT client id (AWS IoT: the thing name), a
	// wire.ValidName. Required.
	ClientID string
	// TLS is used for ssl:// brokers; set Certificates for mutual TLS.
	TLS *tls.Config
	// KeepAlive is the MQTT keepalive. Default 30s.
	KeepAlive time.Duration
	// ConnectTimeout bounds one connection attempt. Default 10s.
	ConnectTimeout time.Duration
	// InFlight bounds unacknowledged publishes. Default 20, a fifth of
	// AWS IoT Core's 100 per connection.
	InFlight int
	// Rate bounds publishes per second. Default 20, a fifth of AWS IoT
	// Core's 100 per connection: over it AWS throttles, and a throttled
	// publish may get no PUBACK at all (PubackTimeout). With telemetry in
	// one batch per BatchInterval, 20/s is far more than a gateway needs.
	Rate float64
	// ByteRate bounds payload bytes per second; one message of up to
	// MaxPayload always passes at once. Default 131072 (128 KiB/s), a
	// quarter of AWS IoT Core's 512 KiB/s per connection.
	ByteRate int
	// PubackTimeout is how long a QoS 1 publish may wait for its PUBACK.
	// When one waits longer the session ends (ErrPubackTimeout): the
	// forwarder reconnects and resends everything not PUBACKed from the
	// outbox. A throttled publish may be neither PUBACKed nor disconnected
	// by the broker, and paho does not resend on a live connection, so
	// without this bound one silent broker would wedge the forwarder. It
	// must exceed the time to write InFlight messages on the slowest link:
	// with the defaults a link of at least ByteRate (about 1 Mbit/s) never
	// queues more than a second of data; on a slower one lower ByteRate or
	// raise PubackTimeout. Default 20s.
	PubackTimeout time.Duration
	// MaxPayload bounds one message in bytes. Default wire.MaxPayload
	// (131072, 128 KB).
	MaxPayload int
	// MaxBatchSamples bounds the samples in one telemetry message (wire
	// v1; BatchMaxSamples bounds a v2 batch).
	// Default 1000.
	MaxBatchSamples int
	// BackoffMin and BackoffMax bound the reconnect delay, which doubles
	// per failed attempt and is jittered to [d/2, d]. Defaults 500ms, 60s.
	BackoffMin time.Duration
	BackoffMax time.Duration
	// Wire is the telemetry format: WireV2 (the default) or WireV1.
	//
	// WireV2 publishes one binary batch of every thing's telemetry
	// (edge/wire/batch) per BatchInterval through AWS IoT Basic Ingest to
	// rule Rule, and removes telemetry from the outbox only when the cloud
	// acknowledges it on wire.AckTopic (docs/telemetry-path.md).
	//
	// WireV1 is the format of clouds without the telemetry stream: one
	// JSON message per thing and sealed outbox batch on
	// dt/bowline/<tenant>/<thing>/telemetry, removed on its PUBACK. Events
	// are the same in both.
	Wire string
	// Rule is the AWS IoT topic rule that takes the batches (WireV2),
	// wire.RuleName(stack, wire.TelemetryRule), e.g.
	// "bowline_dev_telemetry". Required for WireV2.
	Rule string
	// EventsRule is the AWS IoT topic rule that takes events by Basic
	// Ingest, wire.RuleName(stack, wire.EventsRule), e.g.
	// "bowline_dev_events": events go to
	// $aws/rules/<EventsRule>/dt/bowline/<tenant>/<thing>/events, which
	// puts them into the cloud's events stream (docs/events-path.md).
	// Empty (v1): events go through the broker on
	// dt/bowline/<tenant>/<thing>/events, which a cloud accepts until its
	// events cut-over. Either way an event leaves the outbox on its PUBACK.
	EventsRule string
	// BatchInterval is how often a telemetry batch is built and sent
	// (WireV2). A backlog larger than BatchMaxSamples is sent in
	// consecutive batches without waiting. Default 1 minute.
	BatchInterval time.Duration
	// AckTimeout is how long telemetry that was sent (PUBACKed) may stay
	// unacknowledged by the cloud before it is sent again (WireV2). It
	// must exceed the cloud's ack cadence (cloud/durable DefaultAckEvery,
	// 30 minutes) plus BatchInterval. Default DefaultAckTimeout, 45
	// minutes.
	AckTimeout time.Duration
	// BatchMaxSamples bounds the samples of one batch (WireV2), so a
	// backlog is read from the outbox a part at a time. It is shared
	// evenly among the things with data, what one leaves going to the
	// others, so no thing waits behind another's backlog. Default 100000.
	BatchMaxSamples int
	// Logger. Default slog.Default().
	Logger *slog.Logger
	// Now is the gateway's wall clock, stamped on every message as sent_at
	// so the cloud can see and correct a wrong clock (docs/clock.md). It
	// must be the clock the outbox records were stamped with. Default
	// time.Now.
	Now func() time.Time
	// Observer is told about publishes, PUBACKs, connections and cloud
	// acknowledgements (status.Metrics); default NopObserver.
	Observer Observer
}

// DefaultAckTimeout is Config.AckTimeout's default: longer than the
// cloud's ack cadence (cloud/durable's default AckEvery, 30 min) plus a
// batch interval, so a gateway does not resend what the cloud is about to
// acknowledge; the 14 minutes left are how far the cloud's consumer may
// lag before every gateway resends. A gateway holds up to about 31
// minutes of telemetry unacknowledged (docs/cost.md says why these
// numbers). It is the contract's wire.DefaultAckTimeout, from which the
// cloud's consumer sizes its gap grace.
const DefaultAckTimeout = wire.DefaultAckTimeout

// Telemetry wire formats (Config.Wire).
const (
	WireV1 = "v1"
	WireV2 = "v2"
)

func (c *Config) setDefaults() {
	if c.Wire == "" {
		c.Wire = WireV2
	}
	if c.BatchInterval == 0 {
		c.BatchInterval = wire.DefaultBatchInterval
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = DefaultAckTimeout
	}
	if c.BatchMaxSamples == 0 {
		c.BatchMaxSamples = 100_000
	}
	if c.Thing == "" {
		c.Thing = c.ClientID
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = 30 * time.Second
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.InFlight == 0 {
		c.InFlight = 20
	}
	if c.Rate == 0 {
		c.Rate = 20
	}
	if c.ByteRate == 0 {
		c.ByteRate = 128 << 10
	}
	if c.PubackTimeout == 0 {
		c.PubackTimeout = 20 * time.Second
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = wire.MaxPayload
	}
	if c.MaxBatchSamples == 0 {
		c.MaxBatchSamples = 1000
	}
	if c.BackoffMin == 0 {
		c.BackoffMin = 500 * time.Millisecond
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
}

// Validate reports the first field that is missing or out of range. Names
// are held to wire.ValidName, the cloud's rule: a gateway whose tenant ingest
// would refuse does not start.
func (c Config) Validate() error {
	u, err := url.Parse(c.Broker)
	switch {
	case c.Broker == "":
		return fmt.Errorf("forward config: broker: must be set")
	case err != nil || u.Host == "":
		return fmt.Errorf("forward config: broker %q: want tcp://host:port or ssl://host:port", c.Broker)
	case u.Scheme != "tcp" && u.Scheme != "ssl" && u.Scheme != "tls" && u.Scheme != "mqtts":
		return fmt.Errorf("forward config: broker %q: scheme %q: want tcp, ssl, tls or mqtts", c.Broker, u.Scheme)
	}
	if err := c.validateNames(); err != nil {
		return fmt.Errorf("forward config: %w", err)
	}
	switch {
	case c.InFlight < 0 || c.InFlight > 65535:
		return fmt.Errorf("forward config: in_flight %d: want 1-65535", c.InFlight)
	case c.Rate < 0:
		return fmt.Errorf("forward config: rate %g: must be positive", c.Rate)
	case c.ByteRate < 0:
		return fmt.Errorf("forward config: byte_rate %d: must be positive", c.ByteRate)
	case c.PubackTimeout < 0:
		return fmt.Errorf("forward config: puback_timeout %s: must not be negative", c.PubackTimeout)
	case c.MaxPayload < 0 || (c.MaxPayload > 0 && c.MaxPayload < 1024):
		return fmt.Errorf("forward config: max_payload %d: want at least 1024", c.MaxPayload)
	case c.BackoffMin < 0 || c.BackoffMax < 0 || (c.BackoffMax > 0 && c.BackoffMin > c.BackoffMax):
		return fmt.Errorf("forward config: backoff_min %s, backoff_max %s: want 0 <= min <= max", c.BackoffMin, c.BackoffMax)
	case c.KeepAlive < 0 || c.ConnectTimeout < 0:
		return fmt.Errorf("forward config: keepalive %s, connect_timeout %s: must not be negative", c.KeepAlive, c.ConnectTimeout)
	}
	if c.EventsRule != "" && !validRule(c.EventsRule) {
		return fmt.Errorf("forward config: events rule %q: want 1-128 ASCII letters, digits or '_' (an AWS IoT rule name)", c.EventsRule)
	}
	return c.validateTelemetry()
}

// validateTelemetry checks the wire v2 settings; zero values take the
// defaults.
func (c Config) validateTelemetry() error {
	switch c.Wire {
	case "", WireV2:
	case WireV1:
		return nil
	default:
		return fmt.Errorf("forward config: telemetry wire %q: want %q or %q", c.Wire, WireV1, WireV2)
	}
	switch {
	case c.Rule == "":
		return fmt.Errorf("forward config: telemetry rule: must be set for wire v2 (the AWS IoT rule of the stack, e.g. %q), or set wire v1", wire.RuleName("dev", wire.TelemetryRule))
	case !validRule(c.Rule):
		return fmt.Errorf("forward config: telemetry rule %q: want 1-128 ASCII letters, digits or '_' (an AWS IoT rule name)", c.Rule)
	case c.BatchInterval < 0:
		return fmt.Errorf("forward config: telemetry batch_interval %s: must not be negative", c.BatchInterval)
	case c.AckTimeout < 0:
		return fmt.Errorf("forward config: telemetry ack_timeout %s: must not be negative", c.AckTimeout)
	case c.AckTimeout > 0 && c.AckTimeout <= max(c.BatchInterval, 0):
		return fmt.Errorf("forward config: telemetry ack_timeout %s: must be longer than batch_interval %s", c.AckTimeout, c.BatchInterval)
	case c.AckTimeout == 0 && c.BatchInterval >= DefaultAckTimeout:
		return fmt.Errorf("forward config: telemetry batch_interval %s: must be shorter than ack_timeout (default %s)", c.BatchInterval, DefaultAckTimeout)
	case c.BatchMaxSamples < 0:
		return fmt.Errorf("forward config: telemetry batch_max_samples %d: must not be negative", c.BatchMaxSamples)
	}
	return nil
}

// validRule reports whether s can be an AWS IoT rule name.
func validRule(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func (c Config) validateNames() error {
	if err := wire.CheckName("tenant", c.Tenant); err != nil {
		return err
	}
	if err := wire.CheckName("client_id", c.ClientID); err != nil {
		return err
	}
	if c.Thing != "" {
		return wire.CheckName("thing", c.Thing)
	}
	return nil
}
