package fakes

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// The kinds of provider a Fake imitates.
const (
	Shopify  = "shopify"
	Shipping = "shipping"
	Notify   = "notify"
)

// maxBody bounds a recorded request body.
const maxBody = 1 << 20

// Call is one request a Fake received.
type Call struct {
	Method         string          `json:"method"`
	Path           string          `json:"path"`
	IdempotencyKey string          `json:"idempotency_key"`
	Body           json.RawMessage `json:"body,omitempty"`
	// Status is what the Fake answered.
	Status int       `json:"status"`
	At     time.Time `json:"at"`
}

// route is one provider endpoint: the path it serves, its success status
// and how it builds the answer's id.
type route struct {
	path   string
	status int
	prefix string
}

var routes = map[string]route{
	Shopify:  {path: "/orders", status: http.StatusCreated, prefix: "shp_"},
	Shipping: {path: "/shipments", status: http.StatusCreated, prefix: "shpm_"},
	Notify:   {path: "/notifications", status: http.StatusAccepted, prefix: "ntf_"},
}

// Fake is one fake provider. It is safe for concurrent use.
type Fake struct {
	kind  string
	route route
	mux   *http.ServeMux

	mu         sync.Mutex
	calls      []Call
	failTimes  int
	failAlways bool
	failStatus int
	seq        int
}

// New returns a fake of kind (Shopify, Shipping or Notify).
func New(kind string) (*Fake, error) {
	r, ok := routes[kind]
	if !ok {
		return nil, fmt.Errorf("fake kind %q: want %s, %s or %s", kind, Shopify, Shipping, Notify)
	}
	f := &Fake{kind: kind, route: r, mux: http.NewServeMux()}
	f.mux.HandleFunc("POST "+r.path, f.serveProvider)
	f.mux.HandleFunc("GET /_fake/calls", f.serveCalls)
	f.mux.HandleFunc("POST /_fake/fail", f.serveFail)
	f.mux.HandleFunc("POST /_fake/reset", func(w http.ResponseWriter, _ *http.Request) {
		f.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	return f, nil
}

// Kind returns Shopify, Shipping or Notify.
func (f *Fake) Kind() string { return f.kind }

// Path is the provider route the Fake serves, e.g. "/orders".
func (f *Fake) Path() string { return f.route.path }

// ServeHTTP serves the provider route and the control API.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.mux.ServeHTTP(w, r) }

// FailNext makes the next n provider calls answer status (recorded all
// the same).
func (f *Fake) FailNext(n, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failTimes, f.failAlways, f.failStatus = n, false, status
}

// FailAlways makes every provider call answer status until Reset.
func (f *Fake) FailAlways(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failTimes, f.failAlways, f.failStatus = 0, true, status
}

// Reset forgets the calls and stops failing.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.failTimes, f.failAlways, f.failStatus = nil, 0, false, 0
}

// Calls returns a copy of every call received, in arrival order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// CallsWith counts the calls carrying Idempotency-Key key, and those of
// them answered with 2xx.
func (f *Fake) CallsWith(key string) (all, ok int) {
	for _, c := range f.Calls() {
		if c.IdempotencyKey == key {
			all++
			if c.Status >= 200 && c.Status <= 299 {
				ok++
			}
		}
	}
	return all, ok
}

// Succeeded returns the calls that were answered with 2xx.
func (f *Fake) Succeeded() []Call {
	var out []Call
	for _, c := range f.Calls() {
		if c.Status >= 200 && c.Status <= 299 {
			out = append(out, c)
		}
	}
	return out
}

// CountByKey counts calls per idempotency key (all calls, failed or not).
func (f *Fake) CountByKey() map[string]int {
	out := map[string]int{}
	for _, c := range f.Calls() {
		out[c.IdempotencyKey]++
	}
	return out
}

func (f *Fake) serveProvider(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	c := Call{Method: r.Method, Path: r.URL.Path, IdempotencyKey: r.Header.Get("Idempotency-Key"), At: time.Now().UTC()}
	if json.Valid(body) {
		c.Body = body
	}
	f.mu.Lock()
	switch {
	case f.failAlways:
		c.Status = f.failStatus
	case f.failTimes > 0:
		f.failTimes--
		c.Status = f.failStatus
	case c.IdempotencyKey == "":
		c.Status = http.StatusBadRequest
	case c.Body == nil:
		c.Status = http.StatusBadRequest
	default:
		c.Status = f.route.status
	}
	f.seq++
	id := fmt.Sprintf("%s%06d", f.route.prefix, f.seq)
	f.calls = append(f.calls, c)
	f.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(c.Status)
	if c.Status >= 200 && c.Status <= 299 {
		ans := map[string]string{"id": id}
		if f.kind == Shipping {
			ans["tracking"] = "TRK" + id
		}
		_ = json.NewEncoder(w).Encode(ans)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "fake_failure", "message": fmt.Sprintf("%s fake answered %d", f.kind, c.Status)}})
}

func (f *Fake) serveCalls(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	calls := f.Calls()
	if calls == nil {
		calls = []Call{}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": f.kind, "calls": calls})
}

// failRequest is the body of POST /_fake/fail.
type failRequest struct {
	Times  int  `json:"times"`
	Always bool `json:"always"`
	Status int  `json:"status"`
}

func (f *Fake) serveFail(w http.ResponseWriter, r *http.Request) {
	var req failRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		http.Error(w, "fail request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.Status < 100 || req.Status > 599 {
		http.Error(w, fmt.Sprintf("fail request: status %d: want 100-599", req.Status), http.StatusBadRequest)
		return
	}
	if req.Always {
		f.FailAlways(req.Status)
	} else {
		f.FailNext(req.Times, req.Status)
	}
	w.WriteHeader(http.StatusNoContent)
}
