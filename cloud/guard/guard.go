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
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
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
// the defaults above, no metrics registered, slog.Default().
type Config struct {
	// Proxies are the trusted proxies (the load balancer).
	Proxies Proxies
	// Burst, Every and MaxSources: see DefaultBurst, DefaultEvery and
	// DefaultMaxSources (0 means the default).
	Burst      int
	Every      time.Duration
	MaxSources int
	// Registerer, when set, gets bowline_auth_failures_total and
	// bowline_auth_refused_total.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
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
	cfg     Config
	log     *slog.Logger
	failed  *prometheus.CounterVec
	refused *prometheus.CounterVec

	mu      sync.Mutex
	sources *lru.Cache[string, *rate.Limiter]
}

// New validates cfg and returns a Guard, its metrics registered.
func New(cfg Config) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.Every == 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.MaxSources == 0 {
		cfg.MaxSources = DefaultMaxSources
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	sources, err := lru.New[string, *rate.Limiter](cfg.MaxSources)
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	g := &Guard{
		cfg: cfg, log: cfg.Logger, sources: sources,
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bowline_auth_failures_total", Help: "Wrong credentials presented, by kind (bearer, ops, console).",
		}, []string{"kind"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bowline_auth_refused_total", Help: "Requests refused with 429 because their source spent its tries, by kind.",
		}, []string{"kind"}),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{g.failed, g.refused} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("guard metrics: %w", err)
			}
		}
	}
	return g, nil
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
// header) and do not look at the credential.
func (g *Guard) Check(r *http.Request, kind string) (a Attempt, wait time.Duration, ok bool) {
	client := g.cfg.Proxies.Client(r)
	a = Attempt{Kind: kind, Client: client, source: source(client), r: r}
	g.mu.Lock()
	lim, found := g.sources.Get(a.source)
	g.mu.Unlock()
	if !found {
		return a, 0, true
	}
	now := g.cfg.Now()
	if tok := lim.TokensAt(now); tok < 1 {
		g.refused.WithLabelValues(kind).Inc()
		return a, time.Duration((1 - tok) * float64(g.cfg.Every)), false
	}
	return a, 0, true
}

// Failed records that a's credential was wrong: it spends one of the
// source's tries, logs the failure (never the credential) and counts it.
func (g *Guard) Failed(a Attempt) {
	now := g.cfg.Now()
	g.mu.Lock()
	lim, found := g.sources.Get(a.source)
	if !found {
		lim = rate.NewLimiter(rate.Every(g.cfg.Every), g.cfg.Burst)
		lim.SetLimitAt(now, rate.Every(g.cfg.Every)) // start the bucket full at now
		g.sources.Add(a.source, lim)
	}
	g.mu.Unlock()
	lim.AllowN(now, 1)
	left := int(math.Floor(lim.TokensAt(now)))
	g.failed.WithLabelValues(a.Kind).Inc()
	path := ""
	if a.r != nil {
		path = a.r.URL.Path
	}
	g.log.Warn(FailureMessage, "kind", a.Kind, "source", a.Client, "path", path, "tries_left", max(0, left))
}

// Refuse answers a refused attempt: Retry-After in whole seconds (at least
// 1). The caller writes the status and body.
func Refuse(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
}
