package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/guard"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/reconcile"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Environment variables read by SettingsFromEnv.
const (
	AddrEnv          = "BOWLINE_API_ADDR"
	TokensEnv        = "BOWLINE_API_TOKENS"
	OpsTokenEnv      = "BOWLINE_OPS_TOKEN"
	WebhookSecretEnv = "BOWLINE_WEBHOOK_SECRET"
	ConsoleAddrEnv   = "BOWLINE_CONSOLE_ADDR"
)

// ConsoleOff is the Settings.ConsoleAddr that serves no console at all.
const ConsoleOff = "off"

// MinSecretLen is the shortest bearer token, ops token or webhook secret
// SettingsFromEnv accepts, in bytes. Each should be a long random value
// (bowline dev generates 16 random bytes, hex: 32 characters and a prefix);
// 16 bytes is the floor below which a token could be guessed or searched.
const MinSecretLen = 16

// DefaultAddr is where `bowline api` listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8080"

// Emitter commits an event with its writes in one transaction
// (*engine.Engine). It must be safe for concurrent use.
type Emitter interface {
	EmitEvent(ctx context.Context, ev engine.Event) (engine.Envelope, error)
}

// DynamoDB is the part of the DynamoDB API the handlers read with.
type DynamoDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Reconciler produces the operator's reconcile report. It may be slow (it
// verifies every chain); the request's context bounds it.
type Reconciler interface {
	Reconcile(ctx context.Context) (reconcile.Report, error)
}

// Config configures the API.
type Config struct {
	// Emitter commits events (an *engine.Engine built with the Bowline
	// catalog). Required.
	Emitter Emitter
	// DB reads order and idempotency rows. Required.
	DB DynamoDB
	// Names gives the app and inbox tables. Required.
	Names resources.Names
	// Tokens maps bearer tokens to tenants (BOWLINE_API_TOKENS,
	// "tokenA=tenant1,tokenB=tenant2"). Empty means every order is refused.
	Tokens map[string]string
	// OpsToken guards /v1/ops/*; empty disables them (401).
	OpsToken string
	// WebhookSecret verifies payment webhooks. Required: a webhook endpoint
	// without a secret would accept anything.
	WebhookSecret string
	// Prices prices every order by SKU (the client never sets an
	// amount); default DefaultPrices.
	Prices PriceList
	// Tolerance is the webhook timestamp window; default DefaultTolerance.
	Tolerance time.Duration
	// Reconciler answers /v1/ops/reconcile; nil answers 501.
	Reconciler Reconciler
	// Mounts are handlers served on the API's listener beside its own
	// routes, by http.ServeMux pattern, behind the same HSTS header
	// (cloud/app mounts the web console under /console/ there, or nothing
	// when it is served elsewhere). A pattern that is invalid or
	// conflicts with the API's routes is an error from New.
	Mounts map[string]http.Handler
	// Guard counts failed bearer and ops tokens per client address and
	// knows the trusted proxies (cloud/guard); default a Guard with no
	// trusted proxy and no observer. Share one with the console so a
	// source has one count.
	Guard *guard.Guard
	// Observer hears every request, emit and refused webhook; default
	// NopObserver. Metrics (NewMetrics) is the Prometheus one.
	Observer Observer
	// Gatherer is what MetricsHandler serves: the registry the Observer's
	// Metrics (and the Guard's) are registered with. Default an empty
	// registry.
	Gatherer prometheus.Gatherer
	// MaxBodyBytes bounds a request body; default 1 MiB.
	MaxBodyBytes int64
	// IdempotencyTTL is how long an order's Idempotency-Key is remembered;
	// default 24h.
	IdempotencyTTL time.Duration
	// Logger defaults to slog.Default(); Now to time.Now.
	Logger *slog.Logger
	Now    func() time.Time
}

// Validate reports the first missing or invalid field.
func (c Config) Validate() error {
	switch {
	case c.Emitter == nil:
		return errors.New("api config: emitter: required")
	case c.DB == nil:
		return errors.New("api config: db: required")
	case c.Names.Stack == "":
		return errors.New("api config: names: required")
	case c.WebhookSecret == "":
		return fmt.Errorf("api config: webhook secret (%s): required", WebhookSecretEnv)
	case c.Tolerance < 0:
		return fmt.Errorf("api config: tolerance %v: must not be negative", c.Tolerance)
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("api config: max body bytes %d: must not be negative", c.MaxBodyBytes)
	}
	for pattern, h := range c.Mounts {
		if h == nil {
			return fmt.Errorf("api config: mount %q: nil handler", pattern)
		}
	}
	if c.Prices != nil {
		if err := c.Prices.Validate(); err != nil {
			return fmt.Errorf("api config: %w", err)
		}
	}
	for tok, tenant := range c.Tokens {
		if tok == "" {
			return fmt.Errorf("api config: tokens: empty token for tenant %q", tenant)
		}
		if !engine.ValidTenant(tenant) {
			return fmt.Errorf("api config: tokens: tenant %q: %w", tenant, engine.ErrInvalidTenant)
		}
	}
	return nil
}

// checkConsoleAddr accepts "", ConsoleOff or host:port.
func checkConsoleAddr(addr string) error {
	if addr == "" || addr == ConsoleOff {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%s %q: want host:port or %q: %w", ConsoleAddrEnv, addr, ConsoleOff, err)
	}
	return nil
}

// setDefaults fills the zero fields New needs; it fails only if the
// default Guard cannot be built.
func (c *Config) setDefaults() error {
	if c.Prices == nil {
		c.Prices = DefaultPrices()
	}
	if c.Tolerance == 0 {
		c.Tolerance = DefaultTolerance
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.IdempotencyTTL == 0 {
		c.IdempotencyTTL = 24 * time.Hour
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Gatherer == nil {
		c.Gatherer = prometheus.NewRegistry()
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
			return fmt.Errorf("api config: %w", err)
		}
		c.Guard = g
	}
	return nil
}

// ParseTokens parses "tokenA=tenant1,tokenB=tenant2" (spaces around items
// are ignored; "" gives an empty map).
func ParseTokens(s string) (map[string]string, error) {
	out := map[string]string{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		tok, tenant, ok := strings.Cut(item, "=")
		tok, tenant = strings.TrimSpace(tok), strings.TrimSpace(tenant)
		if !ok || tok == "" || tenant == "" {
			return nil, fmt.Errorf("%s item %q: want token=tenant: %w", TokensEnv, redact(item), ErrBadTokens)
		}
		if !engine.ValidTenant(tenant) {
			return nil, fmt.Errorf("%s tenant %q: %w", TokensEnv, tenant, ErrBadTokens)
		}
		if _, dup := out[tok]; dup {
			return nil, fmt.Errorf("%s: a token is listed twice (tenant %q): %w", TokensEnv, tenant, ErrBadTokens)
		}
		out[tok] = tenant
	}
	return out, nil
}

// redact hides a token in an error message, keeping the tenant.
func redact(item string) string {
	if _, tenant, ok := strings.Cut(item, "="); ok {
		return "***=" + tenant
	}
	return "***"
}

// Settings are the API's secrets and address, as read from the
// environment.
type Settings struct {
	Addr          string
	Tokens        map[string]string
	OpsToken      string
	WebhookSecret string
	// Prices is the price list of BOWLINE_PRICES; nil means DefaultPrices.
	Prices PriceList
	// TrustedProxies are the load balancer's addresses
	// (BOWLINE_TRUSTED_PROXIES): only their X-Forwarded-For and
	// X-Forwarded-Proto are believed (cloud/guard).
	TrustedProxies guard.Proxies
	// ConsoleAddr is BOWLINE_CONSOLE_ADDR, where the web console is
	// served (cloud/app): "" under /console/ on the API's listener,
	// ConsoleOff nowhere, host:port on a listener of its own.
	ConsoleAddr string
}

// SettingsFromEnv reads BOWLINE_API_ADDR (default DefaultAddr),
// BOWLINE_API_TOKENS, BOWLINE_OPS_TOKEN, BOWLINE_WEBHOOK_SECRET,
// BOWLINE_TRUSTED_PROXIES, BOWLINE_CONSOLE_ADDR and the price list file
// named by BOWLINE_PRICES (LoadPrices). A token or secret
// shorter than MinSecretLen is an error wrapping ErrShortSecret that names
// the variable (and a token's tenant), never the value. An empty ops token
// or webhook secret is not an error here: bowline dev generates them, and
// Config.Validate refuses an API without a webhook secret.
func SettingsFromEnv() (Settings, error) {
	tokens, err := ParseTokens(os.Getenv(TokensEnv))
	if err != nil {
		return Settings{}, err
	}
	s := Settings{Addr: os.Getenv(AddrEnv), Tokens: tokens, OpsToken: os.Getenv(OpsTokenEnv), WebhookSecret: os.Getenv(WebhookSecretEnv)}
	if s.Addr == "" {
		s.Addr = DefaultAddr
	}
	if _, _, err := net.SplitHostPort(s.Addr); err != nil {
		return Settings{}, fmt.Errorf("%s %q: %w", AddrEnv, s.Addr, err)
	}
	if err := s.checkSecrets(); err != nil {
		return Settings{}, err
	}
	if s.TrustedProxies, err = guard.ParseProxies(os.Getenv(guard.ProxiesEnv)); err != nil {
		return Settings{}, err
	}
	s.ConsoleAddr = strings.TrimSpace(os.Getenv(ConsoleAddrEnv))
	if err := checkConsoleAddr(s.ConsoleAddr); err != nil {
		return Settings{}, err
	}
	if path := os.Getenv(PricesEnv); path != "" {
		if s.Prices, err = LoadPrices(path); err != nil {
			return Settings{}, err
		}
	}
	return s, nil
}

// checkSecrets refuses a secret shorter than MinSecretLen; empty ones are
// left to the caller (see SettingsFromEnv).
func (s Settings) checkSecrets() error {
	short := func(v string) bool { return v != "" && len(v) < MinSecretLen }
	var tenants []string // of short tokens, sorted so the error is stable
	for tok, tenant := range s.Tokens {
		if short(tok) {
			tenants = append(tenants, tenant)
		}
	}
	if len(tenants) > 0 {
		slices.Sort(tenants)
		return fmt.Errorf("%s: the token of tenant %q is shorter than %d bytes; want a long random value: %w", TokensEnv, tenants[0], MinSecretLen, ErrShortSecret)
	}
	if short(s.OpsToken) {
		return fmt.Errorf("%s: shorter than %d bytes; want a long random value: %w", OpsTokenEnv, MinSecretLen, ErrShortSecret)
	}
	if short(s.WebhookSecret) {
		return fmt.Errorf("%s: shorter than %d bytes; want a long random value: %w", WebhookSecretEnv, MinSecretLen, ErrShortSecret)
	}
	return nil
}

// The engine and the SDK client satisfy the interfaces above.
var (
	_ Emitter  = (*engine.Engine)(nil)
	_ DynamoDB = (*dynamodb.Client)(nil)
)
