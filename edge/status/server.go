package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bowline-iot/bowline/edge/wire"
)

// DefaultAddr is the loopback address the endpoint listens on by default.
const DefaultAddr = "127.0.0.1:9110"

// Config configures a Server.
type Config struct {
	// Addr to listen on. Default DefaultAddr. Use a loopback address: the
	// endpoint has no authentication.
	Addr string
	// Report produces the /status document. Required.
	Report func(ctx context.Context) (wire.GatewayStatus, error)
	// Hosts are names besides localhost and loopback addresses that
	// requests may carry in Host (a gateway's own name, when an operator
	// opens the endpoint on purpose). Any other Host is refused with 421:
	// a web page that rebinds its domain to 127.0.0.1 reads nothing.
	Hosts []string
	// Gatherer serves /metrics. Default prometheus.DefaultGatherer.
	Gatherer prometheus.Gatherer
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Validate reports a missing or bad field.
func (c Config) Validate() error {
	if c.Report == nil {
		return fmt.Errorf("status config: report: must be set")
	}
	if c.Addr != "" {
		if _, _, err := net.SplitHostPort(c.Addr); err != nil {
			return fmt.Errorf("status config: addr %q: %w", c.Addr, err)
		}
	}
	return nil
}

// Server is the status HTTP server.
type Server struct {
	cfg Config
	ln  net.Listener
	srv *http.Server
}

// Listen validates cfg and binds the address (so a port clash is reported
// before the agent starts its work).
func Listen(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Gatherer == nil {
		cfg.Gatherer = prometheus.DefaultGatherer
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("status listen %s: %w", cfg.Addr, err)
	}
	s := &Server{cfg: cfg, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /status", s.status)
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	s.srv = &http.Server{Handler: checkHost(mux, cfg.Hosts), ReadHeaderTimeout: 5 * time.Second}
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("status serve %s: %w", s.Addr(), err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(sctx)
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return ctx.Err()
	}
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	rep, err := s.cfg.Report(r.Context())
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "status_unavailable", "message": err.Error()}})
		return
	}
	// The broker URL may carry a password or a token: never shown.
	rep.MQTT.Broker = RedactURL(rep.MQTT.Broker)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rep)
}
