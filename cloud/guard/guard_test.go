package guard

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func req(peer string, headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/orders", nil)
	r.RemoteAddr = peer
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

func TestClientAddressTrustsOnlyTheConfiguredProxy(t *testing.T) {
	lb := MustParseProxies("10.0.0.0/24, 10.0.1.5")
	cases := []struct {
		name string
		p    Proxies
		r    *http.Request
		want string
	}{
		{"no proxies: the peer, header ignored", Proxies{}, req("203.0.113.9:5000", "X-Forwarded-For", "198.51.100.1"), "203.0.113.9"},
		{"untrusted peer: its header ignored", lb, req("203.0.113.9:5000", "X-Forwarded-For", "198.51.100.1"), "203.0.113.9"},
		{"the load balancer: the address it appended", lb, req("10.0.0.7:40000", "X-Forwarded-For", "198.51.100.1"), "198.51.100.1"},
		{"spoofed entries left of the appended one are ignored", lb, req("10.0.0.7:40000", "X-Forwarded-For", "1.1.1.1, 2.2.2.2, 198.51.100.1"), "198.51.100.1"},
		{"a trusted hop is skipped", lb, req("10.0.0.7:40000", "X-Forwarded-For", "198.51.100.1, 10.0.1.5"), "198.51.100.1"},
		{"two headers are one list", lb, req("10.0.0.7:40000", "X-Forwarded-For", "9.9.9.9", "X-Forwarded-For", "198.51.100.1"), "198.51.100.1"},
		{"the load balancer without a header: itself", lb, req("10.0.0.7:40000"), "10.0.0.7"},
		{"garbage rightmost: not trusted, empty -> the peer", lb, req("10.0.0.7:40000", "X-Forwarded-For", "198.51.100.1, nonsense"), "10.0.0.7"},
		{"IPv6 client", lb, req("10.0.0.7:40000", "X-Forwarded-For", "2001:db8::1"), "2001:db8::1"},
	}
	for _, c := range cases {
		if got := c.p.Client(c.r); got != c.want {
			t.Errorf("%s: client %q, want %q", c.name, got, c.want)
		}
	}
}

func TestHTTPSFromTLSOrTheTrustedProxyOnly(t *testing.T) {
	lb := MustParseProxies("10.0.0.0/24")
	tlsReq := req("203.0.113.9:5000")
	tlsReq.TLS = &tls.ConnectionState{}
	cases := []struct {
		name string
		p    Proxies
		r    *http.Request
		want bool
	}{
		{"plain, no header", lb, req("10.0.0.7:1"), false},
		{"TLS on the connection", Proxies{}, tlsReq, true},
		{"the load balancer says https", lb, req("10.0.0.7:1", "X-Forwarded-Proto", "https"), true},
		{"the load balancer says http", lb, req("10.0.0.7:1", "X-Forwarded-Proto", "http"), false},
		{"anyone else says https", lb, req("203.0.113.9:5000", "X-Forwarded-Proto", "https"), false},
		{"no proxies configured", Proxies{}, req("10.0.0.7:1", "X-Forwarded-Proto", "https"), false},
		{"a list: the last hop counts", lb, req("10.0.0.7:1", "X-Forwarded-Proto", "https, http"), false},
	}
	for _, c := range cases {
		if got := c.p.HTTPS(c.r); got != c.want {
			t.Errorf("%s: HTTPS %v, want %v", c.name, got, c.want)
		}
	}
}

func TestParseProxiesNamesTheBadEntry(t *testing.T) {
	for _, s := range []string{"10.0.0.0/33", "lb.internal", "10.0.0.0/24,,x"} {
		_, err := ParseProxies(s)
		if !errors.Is(err, ErrBadProxies) {
			t.Errorf("ParseProxies(%q) = %v, want ErrBadProxies", s, err)
		}
	}
	p, err := ParseProxies(" 10.0.0.0/24 , ::1 ")
	if err != nil || p.String() != "10.0.0.0/24,::1" {
		t.Fatalf("ParseProxies = %q, %v", p.String(), err)
	}
}

// clock is a settable time for the limiter.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestFailuresLockOutTheSourceOnly(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	met := NewMetrics(prometheus.NewRegistry())
	var logs strings.Builder
	g, err := New(Config{Burst: 3, Every: time.Minute, Now: clk.now, Observer: met,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	attacker, other := req("203.0.113.9:5000"), req("198.51.100.7:6000")
	for i := range 3 {
		a, _, ok := g.Check(attacker, KindBearer)
		if !ok {
			t.Fatalf("failure %d refused before the burst was spent", i+1)
		}
		g.Failed(a)
	}
	_, wait, ok := g.Check(attacker, KindBearer)
	if ok || wait <= 0 || wait > time.Minute {
		t.Fatalf("after 3 failures: ok %v wait %v, want refused within a minute", ok, wait)
	}
	if _, _, ok := g.Check(other, KindBearer); !ok {
		t.Fatal("another source is refused by the attacker's failures")
	}
	clk.add(time.Minute)
	a, _, ok := g.Check(attacker, KindBearer)
	if !ok {
		t.Fatal("a minute later the source still has no try")
	}
	g.Failed(a)
	if _, _, ok := g.Check(attacker, KindBearer); ok {
		t.Fatal("the try earned back was not spent by the next failure")
	}
	if got := testutil.ToFloat64(met.failed.WithLabelValues(KindBearer)); got != 4 {
		t.Errorf("failures counted %v, want 4", got)
	}
	if got := testutil.ToFloat64(met.refused.WithLabelValues(KindBearer)); got != 2 {
		t.Errorf("refusals counted %v, want 2", got)
	}
	// Literally: deploy/cloudformation/bowline.yaml's metric filter
	// (ApiAuthFailuresMetricFilter) counts these lines.
	if n := strings.Count(logs.String(), "msg=auth_failure "); n != 4 {
		t.Errorf("%d failure log lines, want 4:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "source=203.0.113.9") || !strings.Contains(logs.String(), "kind=bearer") {
		t.Errorf("failure log lacks kind or source:\n%s", logs.String())
	}
}

// TestParallelAttemptsPayTheirDebt: requests sent at once all pass
// Check before any fails, so a fresh source overspends once; it then
// waits until the debt is paid, so over time it still gets one try per
// Every. A source that only succeeds is never refused.
func TestParallelAttemptsPayTheirDebt(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	g, err := New(Config{Burst: 5, Every: time.Minute, Now: clk.now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// 50 in flight at once: all checked before the first answer.
	var inFlight []Attempt
	for range 50 {
		if a, _, ok := g.Check(req("203.0.113.9:1"), KindOps); ok {
			inFlight = append(inFlight, a)
		}
	}
	var wg sync.WaitGroup
	for _, a := range inFlight {
		wg.Go(func() { g.Failed(a) })
	}
	wg.Wait()
	_, wait, ok := g.Check(req("203.0.113.9:1"), KindOps)
	if ok || wait < 40*time.Minute {
		t.Fatalf("after 50 parallel failures with 5 tries: ok %v, wait %v; want refused for at least 40 minutes (the debt)", ok, wait)
	}
	clk.add(wait)
	if _, _, ok := g.Check(req("203.0.113.9:1"), KindOps); !ok {
		t.Fatalf("after the %v wait the source is still refused", wait)
	}
	for i := range 100 {
		if _, _, ok := g.Check(req("198.51.100.7:1"), KindOps); !ok {
			t.Fatalf("a source that only succeeds was refused at attempt %d", i+1)
		}
	}
}

func TestIPv6SourcesAreCountedPerSlash64(t *testing.T) {
	g, err := New(Config{Burst: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, peer := range []string{"[2001:db8:1:2::1]:1", "[2001:db8:1:2::ffff]:1"} {
		a, _, ok := g.Check(req(peer), KindConsole)
		if !ok {
			t.Fatalf("%s refused early", peer)
		}
		g.Failed(a)
	}
	if _, _, ok := g.Check(req("[2001:db8:1:2:abcd::9]:1"), KindConsole); ok {
		t.Fatal("a third address of the same /64 got a fresh start")
	}
	if _, _, ok := g.Check(req("[2001:db8:1:3::1]:1"), KindConsole); !ok {
		t.Fatal("another /64 is refused")
	}
}

func TestSourcesAreBounded(t *testing.T) {
	g, err := New(Config{Burst: 1, MaxSources: 100, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		a, _, _ := g.Check(req("10.1."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250)+":1"), KindBearer)
		g.Failed(a)
	}
	if n := g.sources.Len(); n > 100 {
		t.Fatalf("%d sources remembered, want at most 100", n)
	}
}
