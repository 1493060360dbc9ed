package api_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/guard"
	"github.com/bowline-iot/bowline/internal/resources"
)

const (
	goodToken = "tok-inmem-0123456789"
	goodOps   = "ops-inmem-0123456789"
)

// from serves one request as if from peer (host:port), with headers.
func (m *inmem) from(peer, method, path string, header map[string]string, body string) response {
	m.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = peer
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	m.api.ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// metricsText is the API's /metrics.
func (m *inmem) metricsText() string {
	rec := httptest.NewRecorder()
	m.api.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

func bearerH(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
}

// TestWrongTokensAreLockedOutPerSource: after guard.DefaultBurst wrong
// bearer tokens (or ops tokens) a source gets 429 with Retry-After, even
// with the right token; another source's right token still works; each
// failure is logged without the token and counted.
func TestWrongTokensAreLockedOutPerSource(t *testing.T) {
	m := newInmem(t, func(c *api.Config) { c.OpsToken = goodOps })
	const attacker, other = "203.0.113.9:5000", "198.51.100.7:6000"
	routes := []struct {
		kind, method, path, good, body string
		okStatus                       int
	}{
		{guard.KindBearer, http.MethodPost, "/v1/orders", goodToken, orderBody, http.StatusCreated},
		{guard.KindOps, http.MethodGet, "/v1/ops/reconcile", goodOps, "", http.StatusNotImplemented},
	}
	for i, rt := range routes {
		attacker := strings.Replace(attacker, "9:", string(rune('1'+i))+":", 1) // a fresh source per route
		for n := range guard.DefaultBurst {
			wrong := "wrong-guess-" + strings.Repeat("x", n) + "-secretsecret"
			if r := m.from(attacker, rt.method, rt.path, bearerH(wrong), rt.body); r.Status != http.StatusUnauthorized {
				t.Fatalf("%s: wrong token %d = %d %s; want 401", rt.kind, n+1, r.Status, r.Body)
			}
		}
		r := m.from(attacker, rt.method, rt.path, bearerH("one-more-wrong-guess"), rt.body)
		if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: wrong token %d = %d (Retry-After %q); want 429 with Retry-After", rt.kind, guard.DefaultBurst+1, r.Status, r.Header.Get("Retry-After"))
		}
		if r := m.from(attacker, rt.method, rt.path, bearerH(rt.good), rt.body); r.Status != http.StatusTooManyRequests {
			t.Fatalf("%s: the right token from the locked source = %d; want 429 (it must not tell right from wrong)", rt.kind, r.Status)
		}
		if r := m.from(other, rt.method, rt.path, bearerH(rt.good), rt.body); r.Status != rt.okStatus {
			t.Fatalf("%s: the right token from another source = %d %s; want %d", rt.kind, r.Status, r.Body, rt.okStatus)
		}
	}
	logs := m.log.String()
	if n := strings.Count(logs, "msg="+guard.FailureMessage); n != 2*guard.DefaultBurst {
		t.Errorf("%d failure log lines, want %d", n, 2*guard.DefaultBurst)
	}
	if strings.Contains(logs, "wrong-guess") || strings.Contains(logs, goodToken) || strings.Contains(logs, goodOps) {
		t.Errorf("a token reached the log:\n%s", logs)
	}
	met := m.metricsText()
	for _, want := range []string{
		`bowline_auth_failures_total{kind="bearer"} 10`, `bowline_auth_failures_total{kind="ops"} 10`,
		`bowline_auth_refused_total{kind="bearer"} 2`, `bowline_auth_refused_total{kind="ops"} 2`,
	} {
		if !strings.Contains(met, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestForwardedForCountsOnlyBehindTheTrustedProxy: behind the load
// balancer the source is the address it appended, so one client's
// failures do not lock out another behind the same balancer; a client
// that is not the balancer cannot pick a fresh source per request with
// the header.
func TestForwardedForCountsOnlyBehindTheTrustedProxy(t *testing.T) {
	m := newInmem(t, func(c *api.Config) {
		g, err := guard.New(guard.Config{Proxies: guard.MustParseProxies("10.0.0.0/24"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		c.Guard = g
	})
	const lb = "10.0.0.5:40000"
	via := func(client, tok string) map[string]string {
		h := bearerH(tok)
		h["X-Forwarded-For"] = client
		return h
	}
	for range guard.DefaultBurst + 1 {
		m.from(lb, http.MethodPost, "/v1/orders", via("1.2.3.4, 203.0.113.9", "wrong-token-guessed-here"), orderBody)
	}
	if r := m.from(lb, http.MethodPost, "/v1/orders", via("203.0.113.9", goodToken), orderBody); r.Status != http.StatusTooManyRequests {
		t.Fatalf("the attacker behind the balancer = %d; want 429", r.Status)
	}
	if r := m.from(lb, http.MethodPost, "/v1/orders", via("198.51.100.7", goodToken), orderBody); r.Status != http.StatusCreated {
		t.Fatalf("another client behind the balancer = %d %s; want 201", r.Status, r.Body)
	}
	// Not the balancer: X-Forwarded-For is its own to write, and ignored.
	const direct = "192.0.2.50:1234"
	for i := range guard.DefaultBurst + 1 {
		m.from(direct, http.MethodPost, "/v1/orders", via("100.64.0."+string(rune('0'+i%10)), "wrong-token-guessed-here"), orderBody)
	}
	if r := m.from(direct, http.MethodPost, "/v1/orders", via("100.64.9.9", goodToken), orderBody); r.Status != http.StatusTooManyRequests {
		t.Fatalf("a direct client rotating X-Forwarded-For = %d; want 429 (counted under its own address)", r.Status)
	}
}

// TestHSTSOnlyOverHTTPS: Strict-Transport-Security when the balancer says
// the client used HTTPS, not when anyone else says so.
func TestHSTSOnlyOverHTTPS(t *testing.T) {
	m := newInmem(t, func(c *api.Config) {
		g, err := guard.New(guard.Config{Proxies: guard.MustParseProxies("10.0.0.0/24")})
		if err != nil {
			t.Fatal(err)
		}
		c.Guard = g
	})
	https := map[string]string{"X-Forwarded-Proto": "https"}
	if r := m.from("10.0.0.5:1", http.MethodGet, "/healthz", https, ""); !strings.HasPrefix(r.Header.Get("Strict-Transport-Security"), "max-age=") {
		t.Errorf("behind the balancer over HTTPS: Strict-Transport-Security %q; want max-age=...", r.Header.Get("Strict-Transport-Security"))
	}
	if r := m.from("203.0.113.9:1", http.MethodGet, "/healthz", https, ""); r.Header.Get("Strict-Transport-Security") != "" {
		t.Errorf("a direct plain request claiming https got Strict-Transport-Security")
	}
}

// TestMountsServeBesideTheAPI: a handler in Config.Mounts answers on the
// API's listener, with HSTS behind the trusted proxy over HTTPS as the
// API's routes; a mount that is invalid or takes an API route is refused.
// (cloud/app mounts the console so: TestConsoleCanBeOffTheAPIListener.)
func TestMountsServeBesideTheAPI(t *testing.T) {
	extra := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "mounted") })
	m := newInmem(t, func(c *api.Config) {
		c.Mounts = map[string]http.Handler{"/extra/": extra}
		g, err := guard.New(guard.Config{Proxies: guard.MustParseProxies("10.0.0.0/24")})
		if err != nil {
			t.Fatal(err)
		}
		c.Guard = g
	})
	r := m.from("10.0.0.5:1", http.MethodGet, "/extra/page", map[string]string{"X-Forwarded-Proto": "https"}, "")
	if r.Status != http.StatusOK || string(r.Body) != "mounted" || !strings.HasPrefix(r.Header.Get("Strict-Transport-Security"), "max-age=") {
		t.Errorf("/extra/page = %d %q (HSTS %q); want the mounted handler with HSTS", r.Status, r.Body, r.Header.Get("Strict-Transport-Security"))
	}
	if r := m.from("203.0.113.9:1", http.MethodGet, "/console/", nil, ""); r.Status != http.StatusNotFound {
		t.Errorf("/console/ without a mount = %d; want 404", r.Status)
	}
	for pattern, h := range map[string]http.Handler{"POST /v1/orders": extra, "/{bad": extra, "/nil/": nil} {
		cfg := api.Config{Emitter: fakeEmitter{}, DB: &fakeDB{}, Names: resources.Names{Stack: "inmem"}, WebhookSecret: testSecret,
			Mounts: map[string]http.Handler{pattern: h}}
		if _, err := api.New(cfg); err == nil || !strings.Contains(err.Error(), pattern) {
			t.Errorf("mount %q: New = %v; want an error naming it", pattern, err)
		}
	}
}

// TestSettingsReadProxiesAndConsoleAddr: BOWLINE_TRUSTED_PROXIES and
// BOWLINE_CONSOLE_ADDR are read, and a bad value is refused naming it.
func TestSettingsReadProxiesAndConsoleAddr(t *testing.T) {
	long := strings.Repeat("k", api.MinSecretLen)
	t.Setenv(api.WebhookSecretEnv, long)
	t.Setenv(guard.ProxiesEnv, "10.0.0.0/24,10.0.1.0/24")
	t.Setenv(api.ConsoleAddrEnv, "off")
	s, err := api.SettingsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if s.TrustedProxies.String() != "10.0.0.0/24,10.0.1.0/24" || s.ConsoleAddr != api.ConsoleOff {
		t.Fatalf("settings: proxies %q, console %q", s.TrustedProxies.String(), s.ConsoleAddr)
	}
	for env, bad := range map[string]string{guard.ProxiesEnv: "lb.example", api.ConsoleAddrEnv: "nowhere"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, bad)
			if _, err := api.SettingsFromEnv(); err == nil || !strings.Contains(err.Error(), env) {
				t.Fatalf("%s=%q: err %v; want an error naming %s", env, bad, err, env)
			}
		})
	}
}

// TestServeHandlerOnItsOwnListener: ServeHandler answers with its handler
// on a listener of its own, not the API, and stops cleanly with its
// context.
func TestServeHandlerOnItsOwnListener(t *testing.T) {
	own := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "the console") })
	m := newInmem(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- m.api.ServeHandler(ctx, "console", "127.0.0.1:0", own, func(a net.Addr) { addrc <- a.String() })
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeHandler: %v", err)
		}
	}()
	base := "http://" + <-addrc
	// Every path is the handler's: none is the API's.
	for _, path := range []string{"/console/login", "/healthz"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "the console" {
			t.Errorf("GET %s on its own listener: %d %q; want the handler's answer", path, resp.StatusCode, body)
		}
	}
}
