package guard

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Defaults of Config.
const (
	// DefaultBurst failures a source may make before it must wait.
	DefaultBurst = 10
	// DefaultEvery is how often a waiting source earns one more try: ten
	// failures at once, then one a minute, so 300 guesses take about five
	// hours instead of seconds.
	DefaultEvery = time.Minute
	// DefaultMaxSources bounds the sources remembered (least recently
	// failed forgotten first): about 1 MB.
	DefaultMaxSources = 10_000
)

// Kinds of credential, the label of the metrics and the log's kind.
const (
	KindBearer  = "bearer"  // a tenant's API bearer token
	KindOps     = "ops"     // the ops token as a bearer token
	KindConsole = "console" // the console's login form
)

// FailureMessage is the log message of every failure: the stack
// template's metric filter matches it (deploy/cloudformation/bowline.yaml,
// ApiAuthFailuresMetricFilter).
const FailureMessage = "auth_failure"

// Config configures a Guard. The zero value is usable: no trusted proxy,
// the defaults above, NopObserver, slog.Default().
type Config struct {
	// Proxies are the trusted proxies (the load balancer).
	Proxies Proxies
	// Burst, Every and MaxSources: see DefaultBurst, DefaultEvery and
	// DefaultMaxSources (0 means the default).
	Burst      int
	Every      time.Duration
	MaxSources int
	// Observer hears every failure and refusal; default NopObserver.
	// Metrics (NewMetrics) counts them in bowline_auth_failures_total and
	// bowline_auth_refused_total.
	Observer Observer
	Logger   *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// setDefaults fills the zero fields New needs.
func (c *Config) setDefaults() {
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.Every == 0 {
		c.Every = DefaultEvery
	}
	if c.MaxSources == 0 {
		c.MaxSources = DefaultMaxSources
	}
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

// Validate reports a negative setting.
func (c Config) Validate() error {
	if c.Burst < 0 || c.Every < 0 || c.MaxSources < 0 {
		return fmt.Errorf("guard config: burst %d, every %v, max sources %d: must not be negative", c.Burst, c.Every, c.MaxSources)
	}
	return nil
}

// Guard counts failed credentials per source and refuses sources that
// spent their tries. It is safe for concurrent use.
type Guard struct {
	cfg Config
	log *slog.Logger
	obs Observer

	mu sync.Mutex // guards sources and every bucket in it
	// sources are the sources that failed, least recently failed or
	// refused forgotten first.
	sources *lru.Cache[string, *bucket]
}

// bucket is one source's tries: a token bucket of Burst tokens, one more
// every Every, that failures may overdraw. Requests sent at once all pass
// Check before any of them fails, so a source can overspend once; the
// debt then keeps it refused until it is paid back, so over time it still
// gets one try per Every. (golang.org/x/time/rate's Limiter does not go
// below zero, so it would forgive that overspending.) The debt is capped
// at a day of tries.
type bucket struct {
	tokens float64
	last   time.Time
}

// refill adds the tokens earned since last, up to burst.
func (b *bucket) refill(now time.Time, burst int, every time.Duration) {
	if now.After(b.last) {
		b.tokens = min(float64(burst), b.tokens+float64(now.Sub(b.last))/float64(every))
		b.last = now
	}
}

// New fills cfg's defaults, validates it and returns a Guard.
func New(cfg Config) (*Guard, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sources, err := lru.New[string, *bucket](cfg.MaxSources)
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	return &Guard{cfg: cfg, log: cfg.Logger, obs: cfg.Observer, sources: sources}, nil
}

// Proxies returns the trusted proxies the Guard was built with.
func (g *Guard) Proxies() Proxies { return g.cfg.Proxies }

// HTTPS reports whether r reached us over HTTPS (Proxies.HTTPS).
func (g *Guard) HTTPS(r *http.Request) bool { return g.cfg.Proxies.HTTPS(r) }

// Attempt is one request about to present a credential.
type Attempt struct {
	Kind   string
	Client string // the client address
	source string
	r      *http.Request
}

// Check is called before a credential is compared. ok false means the
// source has no try left: answer 429 with Retry-After (Refuse writes the
// header) and do not look at the credential. A right credential needs
// nothing more; a wrong one, Failed.
func (g *Guard) Check(r *http.Request, kind string) (a Attempt, wait time.Duration, ok bool) {
	client := g.cfg.Proxies.Client(r)
	a = Attempt{Kind: kind, Client: client, source: source(client), r: r}
	now := g.cfg.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	b, found := g.sources.Get(a.source)
	if !found {
		return a, 0, true // never failed: nothing to remember yet
	}
	b.refill(now, g.cfg.Burst, g.cfg.Every)
	if b.tokens < 1 {
		g.obs.Refused(kind)
		return a, time.Duration((1 - b.tokens) * float64(g.cfg.Every)), false
	}
	return a, 0, true
}

// Failed records that a's credential was wrong: it spends one of the
// source's tries (overdrawing it when attempts came at once), logs the
// failure (never the credential) and counts it.
func (g *Guard) Failed(a Attempt) {
	now := g.cfg.Now()
	g.mu.Lock()
	b, found := g.sources.Get(a.source)
	if !found {
		b = &bucket{tokens: float64(g.cfg.Burst), last: now}
		g.sources.Add(a.source, b)
	}
	b.refill(now, g.cfg.Burst, g.cfg.Every)
	b.tokens = max(b.tokens-1, -float64(24*time.Hour/g.cfg.Every))
	left := max(0, int(math.Floor(b.tokens)))
	g.mu.Unlock()
	g.obs.Failed(a.Kind)
	path := ""
	if a.r != nil {
		path = a.r.URL.Path
	}
	g.log.Warn(FailureMessage, "kind", a.Kind, "source", a.Client, "path", path, "tries_left", left)
}

// Refuse answers a refused attempt: Retry-After in whole seconds (at least
// 1). The caller writes the status and body.
func Refuse(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
}
