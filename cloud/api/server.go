package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bowline-iot/bowline/cloud/guard"
)

// API is the HTTP API. Build it with New; it is an http.Handler.
type API struct {
	cfg Config
	log *slog.Logger
	obs Observer
	mux *http.ServeMux
	// tokens and opsSum are the digests of Config.Tokens and
	// Config.OpsToken (auth.go).
	tokens []tenantToken
	opsSum digest
	guard  *guard.Guard
}

// hstsMaxAge is the Strict-Transport-Security lifetime: one year, the
// usual floor for preload lists.
const hstsMaxAge = "max-age=31536000"

// New fills cfg's defaults, validates it and returns the API.
func New(cfg Config) (*API, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &API{cfg: cfg, log: cfg.Logger.With("component", "api"), obs: cfg.Observer, mux: http.NewServeMux(),
		tokens: tenantTokens(cfg.Tokens), opsSum: digestOf(cfg.OpsToken), guard: cfg.Guard}
	a.mux.Handle("POST /v1/orders", a.instrument("/v1/orders", a.createOrder))
	a.mux.Handle("POST /v1/webhooks/payments", a.instrument("/v1/webhooks/payments", a.paymentWebhook))
	a.mux.Handle("GET /v1/ops/reconcile", a.instrument("/v1/ops/reconcile", a.reconcile))
	a.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	// No /metrics here: this listener is the public one (behind the ALB),
	// and a path rule in front of it does not see what Go's mux decodes
	// (/%6detrics is /metrics). MetricsHandler is served on its own
	// listener (docs/security.md).
	for pattern, h := range cfg.Mounts {
		if err := mount(a.mux, pattern, h); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// mount adds h at pattern to mux, turning the mux's panic on an invalid
// or conflicting pattern into an error.
func mount(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("api config: mount %q: %v", pattern, r)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// MetricsHandler serves the Prometheus text of Config.Gatherer (where
// Config.Observer's Metrics and the guard's are registered). Serve it
// on a listener of its own (bowline api --metrics-addr, loopback by
// default), never on the API's.
func (a *API) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(a.cfg.Gatherer, promhttp.HandlerOpts{})
}

// ServeHTTP routes the request; unknown routes get JSON 404 and 405.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.guard.HTTPS(r) {
		w.Header().Set("Strict-Transport-Security", hstsMaxAge)
	}
	h, pattern := a.mux.Handler(r)
	if pattern == "" {
		// The mux would answer in plain text; answer in the API's shape.
		rec := &probe{header: http.Header{}}
		h.ServeHTTP(rec, r)
		if rec.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", rec.header.Get("Allow"))
			writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" not allowed on "+r.URL.Path)
			return
		}
		writeError(w, http.StatusNotFound, CodeNotFound, "no route "+r.URL.Path)
		return
	}
	h.ServeHTTP(w, r)
}

// probe captures the mux's own 404/405 answer.
type probe struct {
	header http.Header
	status int
}

func (p *probe) Header() http.Header         { return p.header }
func (p *probe) Write(b []byte) (int, error) { return len(b), nil }
func (p *probe) WriteHeader(code int)        { p.status = code }

// Serve listens on addr and serves until ctx ends, then shuts down
// gracefully: it stops accepting, lets requests in flight finish (at most
// grace), and returns. ready, if not nil, receives the bound address.
func (a *API) Serve(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("api listen %s: %w", addr, err)
	}
	return a.ServeListener(ctx, ln, ready)
}

// ShutdownGrace bounds how long requests in flight may run after Serve's
// context ends.
const ShutdownGrace = 15 * time.Second

// ServeListener is Serve on an existing listener (closed on return).
func (a *API) ServeListener(ctx context.Context, ln net.Listener, ready func(net.Addr)) error {
	return a.serve(ctx, "api", a, ln, ready)
}

// ServeHandler serves h alone on addr until ctx ends, as Serve serves the
// API (the same timeouts, graceful shutdown and logs, named by what): for
// what must not be on the API's public listener, such as the web console
// on a listener of its own (bowline api --console-addr, cloud/app).
func (a *API) ServeHandler(ctx context.Context, what, addr string, h http.Handler, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s listen %s: %w", what, addr, err)
	}
	return a.serve(ctx, what, h, ln, ready)
}

func (a *API) serve(ctx context.Context, what string, h http.Handler, ln net.Listener, ready func(net.Addr)) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	a.log.Info(what+" listening", "addr", ln.Addr().String())
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("%s serve %s: %w", what, ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	a.log.Info(what + " stopped")
	if err != nil {
		return fmt.Errorf("%s shutdown: %w", what, err)
	}
	return nil
}

func readAll(r io.Reader) ([]byte, error) { return io.ReadAll(r) }
