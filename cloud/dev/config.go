package dev

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Defaults of Config.
const (
	DefaultBowls     = 4
	DefaultTenants   = 2
	DefaultSpeed     = 1.0
	DefaultRateHz    = 50
	DefaultEvery     = 5 * time.Second
	DefaultRingSize  = 256
	DefaultRelayPoll = 250 * time.Millisecond
	DefaultPollers   = 2
	// DefaultBatchInterval is how often each dev gateway sends its
	// telemetry batch (a real gateway: once a minute), so the demo's
	// charts move within seconds.
	DefaultBatchInterval = 2 * time.Second
	// DefaultAckEvery is the consumer's acknowledgement cadence here
	// (AWS: cloud/durable.DefaultAckEvery, 30 minutes), and DefaultAckTimeout the gateways' resend
	// timeout, longer than a cadence plus the path's latency.
	DefaultAckEvery   = 3 * time.Second
	DefaultAckTimeout = 45 * time.Second
	defaultFutureSkew = 5 * time.Minute
	// fastFutureSkew is ingest's far-future bound when simulated time runs
	// ahead of the wall clock with no end set.
	fastFutureSkew = 10 * 365 * 24 * time.Hour
)

// Errors of the package.
var (
	// ErrConfig: a Config field is out of range; the message names it.
	ErrConfig = errors.New("invalid dev config")
)

// Config configures a development run. Zero fields take the documented
// defaults; Start fills them.
type Config struct {
	// Names selects the resource prefix; zero means resources.FromEnv
	// (BOWLINE_STACK, default "dev").
	Names resources.Names
	// Stack, when set, is a running local stack to use (tests: the shared
	// lstest stack, whose endpoints are already in the environment). Nil
	// means Start launches one (all services) and Close stops it.
	Stack *localstack.Stack
	// Root is the repository root for the emulators; "" means found
	// (localstack.FindRoot).
	Root string

	// Bowls is how many simulated bowls run, each with its own edge agent;
	// default 4. Zero bowls is allowed with NoBowls.
	Bowls   int
	NoBowls bool
	// Tenants own the bowls, round robin (bowl i belongs to tenant i mod
	// len). Default: the tenants of Settings.Tokens when set, else
	// "tenant-1" and "tenant-2".
	Tenants []string
	// Seed makes the bowls' readings and ground truth reproducible;
	// default 1.
	Seed uint64
	// Speed is simulated seconds per real second; default 1. Above 1 the
	// bowls' clock runs ahead of the wall clock (see the package doc), and
	// ingest's far-future bound becomes Duration plus five minutes, or ten
	// years when Duration is zero.
	Speed float64
	// Start is the simulated wall time when the bowls boot; default now.
	Start time.Time
	// Duration is the simulated time the bowls run; zero means until the
	// System is closed.
	Duration time.Duration
	// RateHz is the load cell's sample rate, 1..50; default 50.
	RateHz int
	// PetsPerBowl is 1..4; default 2.
	PetsPerBowl int
	// RingSize is each MCU's ring of unacknowledged frames; default 256.
	RingSize int
	// OnTruth receives the simulator's ground truth (tests, tools).
	OnTruth func(sim.Truth)
	// FirstMealAfter, when positive, gives bowl i's first pet a meal at
	// (i+1) x FirstMealAfter of simulated time after boot (sim.Config), so
	// something happens at once whatever the time of day. Zero: none.
	FirstMealAfter time.Duration

	// DataDir holds each agent's outbox and each bowl's socket; "" means a
	// new temporary directory, removed by Close.
	DataDir string

	// APIAddr is where the API listens; default $BOWLINE_API_ADDR, else
	// 127.0.0.1:8080. Port 0 picks a free one.
	APIAddr string
	// Settings are the API's secrets. Empty fields are generated: a token
	// per tenant, a webhook secret and an ops token (Run prints them).
	Settings api.Settings

	// RelayPoll is the relays' pause after an empty stream read; default
	// 250ms. Pollers is the worker's receive loops; default 2.
	RelayPoll time.Duration
	Pollers   int
	// BatchInterval, AckEvery and AckTimeout are the telemetry path's
	// cadences on the wall clock: the gateways' batch interval, the
	// consumer's acknowledgement cadence and the gateways' resend timeout;
	// defaults DefaultBatchInterval, DefaultAckEvery, DefaultAckTimeout.
	BatchInterval, AckEvery, AckTimeout time.Duration
	// WrapHandler, when set, wraps every DURABLE and BEST_EFFORT handler
	// (benchmarks time handler completion with it).
	WrapHandler func(subscription string, h engine.Handler) engine.Handler
	// IngestObserver is told what ingest does, beside the status counters.
	IngestObserver ingest.Observer

	// ConsoleRefresh is the console's refresh period (cloud/console
	// Config.Refresh); zero means its default.
	ConsoleRefresh time.Duration
	// ConsoleNoTelemetry keeps the console from reading the telemetry
	// stream (its weight charts stay empty); the end-to-end test reads the
	// stream itself and spares the emulator a second reader.
	ConsoleNoTelemetry bool

	// Every is the period of Run's status line; default 5s.
	Every time.Duration
	// JSON makes Run print the report and status lines as JSON.
	JSON bool
	// Verbose makes Run print the whole report as text (endpoints,
	// resources, tokens, exports) instead of the short one.
	Verbose bool
	// ShopOrdersPerHour, when positive, runs the demo shop (shop.go): that
	// many orders per simulated hour, each paid through the signed webhook.
	// ShopFailRate (0..1) is the share of them whose call to one provider
	// (in turn) is refused, so its delivery is dead-lettered. Zero: no shop.
	ShopOrdersPerHour float64
	ShopFailRate      float64

	// Out receives Run's report and status lines; nil means io.Discard.
	Out io.Writer
	// Progress receives Start's steps, one line each, while nothing else
	// is printed yet (`bowline dev`: stderr); nil prints none.
	Progress io.Writer
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// setDefaults fills the zero fields with their defaults: Names from the
// environment (so it may fail), generated secrets, the start time.
func (c *Config) setDefaults() error {
	if c.Names.Stack == "" {
		n, err := resources.FromEnv()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		c.Names = n
	}
	if c.Bowls == 0 && !c.NoBowls {
		c.Bowls = DefaultBowls
	}
	if len(c.Tenants) == 0 {
		if len(c.Settings.Tokens) > 0 {
			c.Tenants = slices.Sorted(maps.Values(c.Settings.Tokens))
			c.Tenants = slices.Compact(c.Tenants)
		} else {
			c.Tenants = DefaultTenantNames(DefaultTenants)
		}
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Speed == 0 {
		c.Speed = DefaultSpeed
	}
	if c.Start.IsZero() {
		c.Start = time.Now().UTC().Truncate(time.Second)
	}
	if c.RateHz == 0 {
		c.RateHz = DefaultRateHz
	}
	if c.PetsPerBowl == 0 {
		c.PetsPerBowl = 2
	}
	if c.RingSize == 0 {
		c.RingSize = DefaultRingSize
	}
	if c.APIAddr == "" {
		c.APIAddr = cmp.Or(c.Settings.Addr, api.DefaultAddr)
	}
	c.fillSecrets()
	c.RelayPoll = cmp.Or(c.RelayPoll, DefaultRelayPoll)
	c.Pollers = cmp.Or(c.Pollers, DefaultPollers)
	c.BatchInterval = cmp.Or(c.BatchInterval, DefaultBatchInterval)
	c.AckEvery = cmp.Or(c.AckEvery, DefaultAckEvery)
	c.AckTimeout = cmp.Or(c.AckTimeout, DefaultAckTimeout)
	c.Every = cmp.Or(c.Every, DefaultEvery)
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Validate reports the first field out of range; it does not change c. A
// zero field stands for its default.
func (c Config) Validate() error {
	if c.ShopOrdersPerHour < 0 || c.ShopOrdersPerHour > 3600 {
		return fmt.Errorf("%w: shop orders per hour %v: want 0 (no shop) to 3600", ErrConfig, c.ShopOrdersPerHour)
	}
	if c.ShopFailRate < 0 || c.ShopFailRate > 1 {
		return fmt.Errorf("%w: shop fail rate %v: want 0 to 1", ErrConfig, c.ShopFailRate)
	}
	if c.Bowls < 0 || c.Bowls > 1000 {
		return fmt.Errorf("%w: bowls %d: want 1..1000", ErrConfig, c.Bowls)
	}
	for _, t := range c.Tenants {
		if t == "" {
			return fmt.Errorf("%w: tenants %q: empty tenant name", ErrConfig, c.Tenants)
		}
	}
	if c.Speed < 0 {
		return fmt.Errorf("%w: speed %v: want a positive number of simulated seconds per second", ErrConfig, c.Speed)
	}
	if c.Duration < 0 {
		return fmt.Errorf("%w: duration %v: must not be negative", ErrConfig, c.Duration)
	}
	if c.FirstMealAfter < 0 {
		return fmt.Errorf("%w: first meal after %v: must not be negative", ErrConfig, c.FirstMealAfter)
	}
	if c.RateHz < 0 || c.RateHz > 50 {
		return fmt.Errorf("%w: rate %d Hz: want 1..50", ErrConfig, c.RateHz)
	}
	if addr := cmp.Or(c.APIAddr, c.Settings.Addr); addr != "" {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("%w: api address %q: %v", ErrConfig, addr, err)
		}
	}
	batch, every := cmp.Or(c.BatchInterval, DefaultBatchInterval), cmp.Or(c.AckEvery, DefaultAckEvery)
	if timeout := cmp.Or(c.AckTimeout, DefaultAckTimeout); batch < 0 || every < 0 || timeout <= every+batch {
		return fmt.Errorf("%w: batch interval %v, ack every %v, ack timeout %v: want positive, and the timeout longer than a batch interval plus an ack cadence", ErrConfig, batch, every, timeout)
	}
	if c.RelayPoll < 0 || c.Pollers < 0 {
		return fmt.Errorf("%w: relay poll %v, pollers %d: must not be negative", ErrConfig, c.RelayPoll, c.Pollers)
	}
	if c.Every < 0 {
		return fmt.Errorf("%w: every %v: must not be negative", ErrConfig, c.Every)
	}
	return nil
}

// DefaultTenantNames returns "tenant-1" .. "tenant-n".
func DefaultTenantNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("tenant-%d", i+1)
	}
	return out
}

// fillSecrets generates what Settings lacks: a token per tenant that has
// none, the webhook secret and the ops token.
func (c *Config) fillSecrets() {
	if c.Settings.Tokens == nil {
		c.Settings.Tokens = map[string]string{}
	}
	has := map[string]bool{}
	for _, t := range c.Settings.Tokens {
		has[t] = true
	}
	for _, t := range c.Tenants {
		if !has[t] {
			c.Settings.Tokens["dev_"+t+"_"+randHex(8)] = t
		}
	}
	if c.Settings.WebhookSecret == "" {
		c.Settings.WebhookSecret = "whsec_dev_" + randHex(16)
	}
	if c.Settings.OpsToken == "" {
		c.Settings.OpsToken = "ops_dev_" + randHex(16)
	}
}

// futureSkew is ingest's far-future bound for this run.
func (c *Config) futureSkew() time.Duration {
	if c.Speed <= 1 {
		return defaultFutureSkew
	}
	if c.Duration > 0 {
		return c.Duration + defaultFutureSkew
	}
	return fastFutureSkew
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
