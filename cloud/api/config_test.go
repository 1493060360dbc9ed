package api_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero without filling
// any of them (New does, in setDefaults).
func TestValidateKeepsItsConfig(t *testing.T) {
	cfg := api.Config{Emitter: fakeEmitter{}, DB: &fakeDB{}, Names: resources.Names{Stack: "inmem"}, WebhookSecret: testSecret}
	if err := testkit.ValidateKeeps(t, cfg); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}

// heard is an Observer that keeps the calls it needs; NopObserver answers
// the rest.
type heard struct {
	api.NopObserver
	mu       sync.Mutex
	requests []string
	emitted  []string
}

func (h *heard) Request(route string, code int, _ time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests = append(h.requests, route+" "+http.StatusText(code))
}

func (h *heard) Emitted(typ string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.emitted = append(h.emitted, typ)
}

// TestObserverHearsRequestsAndEmits: Config.Observer hears each routed
// request with its status and each committed event, in place of the
// Metrics newInmem put there (which then count nothing).
func TestObserverHearsRequestsAndEmits(t *testing.T) {
	obs := &heard{}
	m := newInmem(t, func(c *api.Config) { c.Observer = obs })
	if r := m.do(http.MethodPost, "/v1/orders", bearerH(goodToken), []byte(orderBody)); r.Status != http.StatusCreated {
		t.Fatalf("order = %d %s; want 201", r.Status, r.Body)
	}
	m.do(http.MethodPost, "/v1/orders", bearerH("wrong-token-guessed-here"), []byte(orderBody))
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if got, want := strings.Join(obs.requests, ", "), "/v1/orders Created, /v1/orders Unauthorized"; got != want {
		t.Errorf("requests heard: %s; want %s", got, want)
	}
	if got, want := strings.Join(obs.emitted, ", "), catalog.TypeOrderCreated; got != want {
		t.Errorf("emits heard: %s; want %s", got, want)
	}
	if met := m.metrics(); strings.Contains(met, "bowline_api_requests_total{") {
		t.Errorf("the replaced Metrics counted requests:\n%s", met)
	}
}
