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
	// InFlight bounds unacknowledged publishes. Default 100.
	InFlight int
	// Rate bounds publishes per second. Default 100.
	Rate float64
	// MaxPayload bounds one message in bytes. Default wire.MaxPayload
	// (131072, 128 KB).
	MaxPayload int
	// MaxBatchSamples bounds the samples in one telemetry message.
	// Default 1000.
	MaxBatchSamples int
	// BackoffMin and BackoffMax bound the reconnect delay, which doubles
	// per failed attempt and is jittered to [d/2, d]. Defaults 500ms, 60s.
	BackoffMin time.Duration
	BackoffMax time.Duration
	// Logger. Default slog.Default().
	Logger *slog.Logger
	// Now is the gateway's wall clock, stamped on every message as sent_at
	// so the cloud can see and correct a wrong clock (docs/clock.md). It
	// must be the clock the outbox records were stamped with. Default
	// time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
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
		c.InFlight = 100
	}
	if c.Rate == 0 {
		c.Rate = 100
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
	case c.MaxPayload < 0 || (c.MaxPayload > 0 && c.MaxPayload < 1024):
		return fmt.Errorf("forward config: max_payload %d: want at least 1024", c.MaxPayload)
	case c.BackoffMin < 0 || c.BackoffMax < 0 || (c.BackoffMax > 0 && c.BackoffMin > c.BackoffMax):
		return fmt.Errorf("forward config: backoff_min %s, backoff_max %s: want 0 <= min <= max", c.BackoffMin, c.BackoffMax)
	case c.KeepAlive < 0 || c.ConnectTimeout < 0:
		return fmt.Errorf("forward config: keepalive %s, connect_timeout %s: must not be negative", c.KeepAlive, c.ConnectTimeout)
	}
	return nil
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
