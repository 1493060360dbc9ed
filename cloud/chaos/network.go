package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// network is the fault layer between the processes and what they talk
// to: toxiproxy (in process) on every TCP link, and a throttle proxy
// (HTTP) in front of DynamoDB and Kinesis.
type network struct {
	server *toxiproxy.ApiServer
	links  map[string]*toxiproxy.Proxy
	thr    map[string]*throttle
	srvs   []*http.Server
}

func newNetwork() *network {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	return &network{server: srv, links: map[string]*toxiproxy.Proxy{}, thr: map[string]*throttle{}}
}

// link puts a toxiproxy proxy in front of upstream (host:port) and returns
// its address.
func (n *network) link(name, upstream string) (string, error) {
	p := toxiproxy.NewProxy(n.server, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return "", fmt.Errorf("toxiproxy link %s to %s: %w", name, upstream, err)
	}
	n.links[name] = p
	return p.Listen, nil
}

// toxic adds a toxic of kind (latency, reset_peer, timeout) to a link, and
// to the links named after it ("mqtt" is also "mqtt-gw").
func (n *network) toxic(name, kind string) error {
	attrs := map[string]string{
		"latency":    `{"latency":400,"jitter":200}`,
		"reset_peer": `{"timeout":100}`,
		"timeout":    `{"timeout":0}`,
	}[kind]
	if attrs == "" {
		return fmt.Errorf("toxic %q: want latency, reset_peer or timeout", kind)
	}
	found := false
	for _, l := range n.family(name) {
		found = true
		if err := n.toxicAttrs(l, kind, kind, attrs); err != nil {
			return err
		}
	}
	if !found {
		return fmt.Errorf("no link %q", name)
	}
	return nil
}

// toxicAttrs adds the toxic typ named toxic, with its attributes as JSON,
// to the link name.
func (n *network) toxicAttrs(name, toxic, typ, attrs string) error {
	p, ok := n.links[name]
	if !ok {
		return fmt.Errorf("no link %q", name)
	}
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":"downstream","toxicity":1,"attributes":%s}`, toxic, typ, attrs)
	_, err := p.Toxics.AddToxicJson(strings.NewReader(body))
	if err != nil && strings.Contains(err.Error(), "already exists") {
		return nil
	}
	return err
}

// family is name and the links named name-<something>.
func (n *network) family(name string) []string {
	var out []string
	for l := range n.links {
		if l == name || strings.HasPrefix(l, name+"-") {
			out = append(out, l)
		}
	}
	return out
}

// heal removes a toxic from a link and the links named after it.
func (n *network) heal(name, kind string) {
	for _, l := range n.family(name) {
		_ = n.links[l].Toxics.RemoveToxic(context.Background(), kind)
	}
}

// healAll removes every toxic and ends every throttle.
func (n *network) healAll() {
	for _, p := range n.links {
		p.Toxics.ResetToxics(context.Background())
	}
	for _, t := range n.thr {
		t.set(false)
	}
}

// throttleProxy puts a throttle proxy in front of the HTTP endpoint up
// ("http://host:port") and returns its URL.
func (n *network) throttleProxy(name, up string, errType, msg string) (string, error) {
	u, err := url.Parse(up)
	if err != nil {
		return "", fmt.Errorf("throttle proxy %s: upstream %q: %w", name, up, err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	// A caller that gave up (a killed process, an SDK timeout) is not news.
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	t := &throttle{proxy: rp, errType: errType, msg: msg, rng: rand.New(rand.NewPCG(1, 2))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("throttle proxy %s: %w", name, err)
	}
	srv := &http.Server{Handler: t, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	n.srvs = append(n.srvs, srv)
	n.thr[name] = t
	return "http://" + ln.Addr().String(), nil
}

func (n *network) close() {
	for _, p := range n.links {
		p.Stop()
	}
	for _, s := range n.srvs {
		_ = s.Close()
	}
}

// throttle answers a share of requests, while on, the way the AWS JSON
// protocol answers throttling: HTTP 400 with the error type in "__type"
// (internal/faultproxy uses the same shape). The SDKs retry these with
// backoff; callers see them only when the retries run out.
type throttle struct {
	proxy   *httputil.ReverseProxy
	errType string
	msg     string

	mu      sync.Mutex
	on      bool
	rng     *rand.Rand
	answers int
}

func (t *throttle) set(on bool) {
	t.mu.Lock()
	t.on = on
	t.mu.Unlock()
}

func (t *throttle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	// Half the requests while on (every request when rng is nil).
	hit := t.on && (t.rng == nil || t.rng.IntN(2) == 0)
	if hit {
		t.answers++
	}
	t.mu.Unlock()
	if !hit {
		t.proxy.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"__type":%q,"message":%q}`, t.errType, t.msg)
}

// providerGate sits in front of a fake provider: while it hangs, a request
// reaches the provider (its effect happens) but the answer is held until
// the caller gives up (its context ends) or hangMax: the worst case of a
// hung provider, since the retry must not become a second effect.
type providerGate struct {
	next http.Handler
	mu   sync.Mutex
	hang bool
}

const hangMax = 30 * time.Second

func (g *providerGate) set(hang bool) {
	g.mu.Lock()
	g.hang = hang
	g.mu.Unlock()
}

func (g *providerGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	hang := g.hang && !strings.HasPrefix(r.URL.Path, "/_")
	g.mu.Unlock()
	if hang {
		g.next.ServeHTTP(httptest.NewRecorder(), r)
		select {
		case <-r.Context().Done():
			return
		case <-time.After(hangMax):
			http.Error(w, "hung (chaos)", http.StatusGatewayTimeout)
			return
		}
	}
	g.next.ServeHTTP(w, r)
}
