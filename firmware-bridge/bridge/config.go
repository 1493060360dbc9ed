package bridge

import (
	"fmt"
	"log/slog"
	"time"
)

// Config configures a Bridge. Zero durations take the documented defaults.
type Config struct {
	// Sink receives the records. Required.
	Sink Sink
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Observer observes the bridge; default NopObserver. See NewMetrics.
	Observer Observer
	// MaxBatch is the most records per Deliver; default 64.
	MaxBatch int
	// TimeSyncInterval is how often a TimeSync goes to the MCU to
	// re-estimate the uptime offset; default 10s.
	TimeSyncInterval time.Duration
	// HelloRetry is how often the bridge asks for a Hello until it has one;
	// default 1s.
	HelloRetry time.Duration
	// ResendInterval is the least time between two resend requests or
	// repeated acks for the same sequence number; default 20ms.
	ResendInterval time.Duration
	// RetryMin and RetryMax bound the exponential backoff between Deliver
	// attempts of a failed batch; defaults 100ms and 5s.
	RetryMin, RetryMax time.Duration
	// Now is the wall clock; default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 64
	}
	if c.TimeSyncInterval == 0 {
		c.TimeSyncInterval = 10 * time.Second
	}
	if c.HelloRetry == 0 {
		c.HelloRetry = time.Second
	}
	if c.ResendInterval == 0 {
		c.ResendInterval = 20 * time.Millisecond
	}
	if c.RetryMin == 0 {
		c.RetryMin = 100 * time.Millisecond
	}
	if c.RetryMax == 0 {
		c.RetryMax = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate checks the config after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Sink == nil:
		return fmt.Errorf("%w: no sink", ErrConfig)
	case c.MaxBatch < 1:
		return fmt.Errorf("%w: max batch %d below 1", ErrConfig, c.MaxBatch)
	case c.TimeSyncInterval < 0 || c.HelloRetry < 0 || c.ResendInterval < 0:
		return fmt.Errorf("%w: negative interval", ErrConfig)
	case c.RetryMin <= 0 || c.RetryMax < c.RetryMin:
		return fmt.Errorf("%w: retry backoff %v..%v", ErrConfig, c.RetryMin, c.RetryMax)
	}
	return nil
}
