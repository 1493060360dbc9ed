package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/engine/attr"
)

// Prefix is where the console is mounted.
const Prefix = "/console/"

//go:embed assets templates
var files embed.FS

// Console is the web console: an http.Handler for Prefix, and Run for
// the reads that keep its pages fresh.
type Console struct {
	cfg       Config
	log       *eventLog
	telemetry *telemetryStore
	agents    *agentPoller
	sampler   sampler
	sessions  *sessions
	pages     map[string]*template.Template
	assets    http.Handler
	mux       *http.ServeMux
	logger    *slog.Logger
	outages   outages

	mu       sync.RWMutex
	devices  map[string]string // thing -> tenant, from the registry
	redrives []*redriveRun     // newest last
	// openLetters is the open dead letters at the last count (-1: the
	// count failed), for the nav tab.
	openLetters int
}

// New fills cfg's defaults, validates it and builds the console. It makes
// no AWS call; Run starts the reads.
func New(cfg Config) (*Console, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Console{
		cfg:       cfg,
		log:       newEventLog(cfg.DB, cfg.Names.EventsTable(), cfg.MaxEventsPerTenant, cfg.MaxEventBytes),
		telemetry: newTelemetryStore(),
		agents:    newAgentPoller(cfg.Agents),
		sessions:  &sessions{ttl: cfg.SessionTTL, now: cfg.Now, m: map[string]session{}},
		logger:    cfg.Logger.With("component", "console"),
		devices:   map[string]string{},
	}
	var err error
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	sub, _ := fs.Sub(files, "assets")
	c.assets = http.StripPrefix(Prefix+"assets/", http.FileServerFS(sub))
	c.routes()
	return c, nil
}

func (c *Console) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET "+Prefix+"login", c.loginPage)
	m.HandleFunc("POST "+Prefix+"login", c.loginPost)
	m.HandleFunc("POST "+Prefix+"logout", c.authed(func(w http.ResponseWriter, r *http.Request, _ session) { c.logout(w, r) }))
	m.HandleFunc("GET "+Prefix+"assets/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		c.assets.ServeHTTP(w, r)
	})
	m.HandleFunc("GET "+Prefix+"{$}", c.authed(c.pipelinePage))
	m.HandleFunc("GET "+Prefix+"bowls", c.authed(c.bowlsPage))
	m.HandleFunc("GET "+Prefix+"bowls/{thing}", c.authed(c.bowlPage))
	m.HandleFunc("GET "+Prefix+"tenants", c.authed(c.tenantsPage))
	m.HandleFunc("GET "+Prefix+"tenants/{tenant}", c.authed(c.tenantPage))
	m.HandleFunc("POST "+Prefix+"tenants/{tenant}/verify", c.authed(c.verifyNow))
	m.HandleFunc("GET "+Prefix+"tenants/{tenant}/events/{seq}", c.authed(c.eventPage))
	m.HandleFunc("GET "+Prefix+"dead-letters", c.authed(c.deadLettersPage))
	m.HandleFunc("POST "+Prefix+"dead-letters/redrive", c.authed(c.redrivePost))
	m.HandleFunc("GET "+Prefix+"commerce", c.authed(c.commercePage))
	m.HandleFunc("GET "+Prefix+"search", c.authed(c.searchPage))
	m.HandleFunc(Prefix, c.authed(func(w http.ResponseWriter, r *http.Request, sess session) {
		c.notFound(w, r, sess, "no page "+r.URL.Path)
	}))
	c.mux = m
}

// ServeHTTP serves the console with its security headers.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would make browsers send "Origin: null" on our own POSTs
	if c.cfg.Guard.HTTPS(r) {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	c.mux.ServeHTTP(w, r)
}

// Run keeps the pages' data fresh until ctx ends: the event logs and
// chains, the telemetry stream, the agents, metrics and queues.
func (c *Console) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	reader := &rollupReader{db: c.cfg.Rollups, table: c.cfg.Names.TelemetryTable(), things: c.things, now: c.now, store: c.telemetry, log: c.logger, outages: &c.outages}
	if !c.cfg.NoTelemetry {
		wg.Go(func() { reader.run(ctx) })
	}
	wg.Go(func() {
		every(ctx, c.cfg.Refresh, func(i int) {
			if i%5 == 0 {
				c.refreshTenants(ctx)
				c.refreshDevices(ctx)
			}
			if i%5 == 0 {
				c.countLetters(ctx)
			}
			c.tailLog(ctx)
		})
	})
	wg.Go(func() { every(ctx, c.cfg.VerifyEvery, func(i int) { c.verifyAll(ctx, i) }) })
	wg.Go(func() {
		every(ctx, c.cfg.Refresh, func(int) {
			c.agents.poll(ctx)
			c.sampler.push(c.takeSample(ctx))
		})
	})
	wg.Wait()
	return nil
}

// every runs f at once and then every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func(i int)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for i := 0; ; i++ {
		f(i)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh reads everything once, now (tests and benchmarks; Run does it
// on its own).
func (c *Console) Refresh(ctx context.Context) {
	c.refreshTenants(ctx)
	c.refreshDevices(ctx)
	c.tailLog(ctx)
	c.countLetters(ctx)
	c.verifyAll(ctx, 0)
	c.agents.poll(ctx)
	c.sampler.push(c.takeSample(ctx))
}

// tailLog reads the event logs' new rows, noting whether DynamoDB
// answered.
func (c *Console) tailLog(ctx context.Context) {
	err := c.log.tail(ctx)
	if ctx.Err() != nil {
		return
	}
	c.outages.note(sourceEvents, "DynamoDB table "+c.cfg.Names.EventsTable(), "", err, time.Now())
	if err != nil {
		c.logger.Warn("console: read event logs", "err", err)
	}
}

// countLetters counts the open dead letters for the nav tab (-1: not
// known).
func (c *Console) countLetters(ctx context.Context) {
	all, err := c.cfg.DeadLetters.All(ctx)
	n := 0
	for _, l := range all {
		if !l.Poison && l.Open() {
			n++
		}
	}
	if err != nil {
		n = -1
	}
	c.mu.Lock()
	c.openLetters = n
	c.mu.Unlock()
}

func (c *Console) refreshTenants(ctx context.Context) {
	ts, err := c.cfg.Chains.HeadTenants(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.logger.Warn("console: list tenants", "err", err)
		}
		return
	}
	for _, a := range c.cfg.Agents {
		ts = append(ts, a.Tenant)
	}
	c.log.setTenants(ts)
}

// refreshDevices reads the device registry (app-table rows with entity
// "device": a small scan).
func (c *Console) refreshDevices(ctx context.Context) {
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(c.cfg.Names.AppTable()),
		FilterExpression:          aws.String("entity = :e"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": attr.S(devices.Entity)},
		ProjectionExpression:      aws.String("thing, tenant"),
	}
	found := map[string]string{}
	for {
		out, err := c.cfg.DB.Scan(ctx, in)
		if err != nil {
			if ctx.Err() == nil {
				c.logger.Warn("console: read device registry", "err", err)
			}
			return
		}
		for _, it := range out.Items {
			if th := attr.GetS(it, "thing"); th != "" {
				found[th] = attr.GetS(it, "tenant")
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	c.mu.Lock()
	c.devices = found
	c.mu.Unlock()
}

// page is what every template gets.
type page struct {
	Title   string
	Nav     string
	CSRF    string
	Error   string
	Notice  string
	LiveURL string
	Refresh int // milliseconds between live updates
	Stack   string
	// SimNow is set under a simulated clock (bowline dev); BowlClock
	// names the bowls' clock and BowlNow, WallNow are both clocks now
	// (clock.go); the live region brings them up to date with each
	// update, and WallNow's seconds show when it last did.
	SimNow    string
	BowlClock string
	BowlNow   string
	WallNow   string
	Data      any
	// Health is the banner over every page; Letters and Broken the
	// counts on the nav tabs (open dead letters, broken chains; -1:
	// unknown).
	Health          health
	Letters, Broken int
}

var funcs = template.FuncMap{
	"undecodable": func() string { return undecodable },
	"short": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return s[:n]
	},
	"hhmm": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("15:04:05")
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("Jan 2 15:04:05")
	},
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		d := time.Since(t)
		switch {
		case d < 2*time.Second:
			return "just now"
		case d < time.Minute:
			return fmt.Sprintf("%d s ago", int(d.Seconds()))
		case d < time.Hour:
			return fmt.Sprintf("%d min ago", int(d.Minutes()))
		}
		return t.UTC().Format("Jan 2 15:04") + " UTC"
	},
	"int":  func(n any) string { return fmtIntAny(n) },
	"json": prettyJSON,
	"g":    func(v float64) string { return fmt.Sprintf("%.1f g", v) },
	"add":  func(a, b int) int { return a + b },
	// problem says a raw error from service in words (health.go).
	"problem": func(service, raw string) *problem {
		if raw == "" {
			return nil
		}
		p := explain(service, "", errors.New(raw))
		return &p
	},
	"hours": func(d time.Duration) string {
		return fmt.Sprintf("%g hours", d.Hours())
	},
}

func fmtIntAny(n any) string {
	switch v := n.(type) {
	case int:
		return fmtInt(int64(v))
	case int64:
		return fmtInt(v)
	case uint64:
		return fmtInt(int64(v))
	case float64:
		return fmtInt(int64(v))
	}
	return fmt.Sprint(n)
}

func prettyJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// parsePages parses the layout with each page's template.
func parsePages() (map[string]*template.Template, error) {
	layout, err := files.ReadFile("templates/layout.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		body, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		t, err := template.New("layout").Funcs(funcs).Parse(string(layout))
		if err == nil {
			_, err = t.Parse(string(body))
		}
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", n, err)
		}
		out[name] = t
	}
	return out, nil
}

// render writes page name: the whole page, or only its live region when
// the request asks for it (?live=1, console.js).
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t, ok := c.pages[name]
	if !ok {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	p.Stack = c.cfg.Names.Stack
	if c.cfg.SimClock != nil {
		p.SimNow = c.cfg.SimClock().UTC().Format("Jan 2 15:04")
	}
	if p.CSRF != "" { // logged in: the banner and the tabs' counts
		p.Health = healthOf(c.stages())
		c.mu.RLock()
		p.Letters = c.openLetters
		c.mu.RUnlock()
		for _, v := range c.log.views() {
			if v.Checked() && !v.Chain.Intact {
				p.Broken++
			}
		}
	}
	p.BowlClock, p.BowlNow, p.WallNow = c.bowlClockName(), c.now().UTC().Format("Jan 2 15:04"), time.Now().UTC().Format("15:04:05")
	if p.Refresh == 0 {
		p.Refresh = int(c.cfg.Refresh / time.Millisecond)
	}
	which := "layout"
	if r.URL.Query().Get("live") == "1" && t.Lookup("live") != nil {
		which = "live"
	}
	var buf bytes.Buffer
	err := t.ExecuteTemplate(&buf, which, p)
	if which == "live" && err == nil {
		// The banner and the tabs' counts ride along; console.js moves
		// them out of the live region into their places.
		err = t.ExecuteTemplate(&buf, "sync", p)
	}
	if err != nil {
		c.logger.Error("console: render", "page", name, "err", err)
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (c *Console) forbidden(w http.ResponseWriter, r *http.Request, why string) {
	c.render(w, r, http.StatusForbidden, "message", page{Title: "Refused", Error: why})
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request, sess session, why string) {
	c.render(w, r, http.StatusNotFound, "message", page{Title: "Not found", Error: why, CSRF: sess.csrf})
}

func (c *Console) failed(w http.ResponseWriter, r *http.Request, sess session, err error) {
	c.logger.Warn("console: page failed", "path", r.URL.Path, "err", err)
	c.render(w, r, http.StatusBadGateway, "message", page{Title: "Unavailable", Error: err.Error(), CSRF: sess.csrf})
}

// Disabled is the handler to mount when the console cannot run (no ops
// token): every request gets 403 and the reason.
func Disabled(reason string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "<!doctype html><html lang=en><meta charset=utf-8><title>Console disabled</title><h1>The Bowline console is disabled</h1><p>%s</p></html>\n", template.HTMLEscapeString(reason))
	})
}

// Stats are what the console has read so far (benchmarks and tests wait
// on them).
type Stats struct {
	TelemetryRecords int64
	Samples          int64
	Things           int
	Tenants          int
	Events           int
	Verified         int // tenants with a finished verification
}

// Stats returns what the console has read so far.
func (c *Console) Stats() Stats {
	var s Stats
	s.TelemetryRecords, _, _ = c.telemetry.status()
	c.telemetry.mu.RLock()
	for _, x := range c.telemetry.things {
		s.Samples += x.samples
	}
	s.Things = len(c.telemetry.things)
	c.telemetry.mu.RUnlock()
	for _, v := range c.log.views() {
		s.Tenants++
		s.Events += v.Events
		if v.Checked() {
			s.Verified++
		}
	}
	return s
}

// now is the clock bowls' data is stamped with: the simulated clock under
// `bowline dev`, else the wall clock.
func (c *Console) now() time.Time {
	if c.cfg.SimClock != nil {
		return c.cfg.SimClock()
	}
	return time.Now()
}
