package api_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/guard"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/resources"
)

// inmem is an API on in-memory fakes, for what needs no emulator: the
// handlers' own checks, their logs and metrics. Nothing it emits is stored.
type inmem struct {
	t   *testing.T
	api *api.API
	log *syncBuffer
	db  *fakeDB
}

// newInmem builds an API on fakes, its metrics and its guard's on one
// registry as cloud/app wires them; edit adjusts the config first.
func newInmem(t *testing.T, edit func(*api.Config)) *inmem {
	t.Helper()
	m := &inmem{t: t, log: &syncBuffer{}, db: &fakeDB{}}
	reg, log := prometheus.NewRegistry(), slog.New(slog.NewTextHandler(m.log, nil))
	g, err := guard.New(guard.Config{Observer: guard.NewMetrics(reg), Logger: log})
	if err != nil {
		t.Fatalf("guard.New: %v", err)
	}
	cfg := api.Config{
		Emitter: fakeEmitter{}, DB: m.db, Names: resources.Names{Stack: "inmem"},
		Tokens: map[string]string{"tok-inmem-0123456789": "tenant-a"}, WebhookSecret: testSecret,
		Observer: api.NewMetrics(reg), Gatherer: reg, Guard: g, Logger: log,
	}
	if edit != nil {
		edit(&cfg)
	}
	a, err := api.New(cfg)
	if err != nil {
		t.Fatalf("api.New: %v", err)
	}
	m.api = a
	return m
}

// do serves one request and returns its response.
func (m *inmem) do(method, path string, header map[string]string, body []byte) response {
	m.t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	m.api.ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// metrics returns the Prometheus text of the API's metrics.
func (m *inmem) metrics() string {
	rec := httptest.NewRecorder()
	m.api.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// fakeEmitter commits nothing and answers with an empty envelope.
type fakeEmitter struct{}

func (fakeEmitter) EmitEvent(context.Context, engine.Event) (engine.Envelope, error) {
	return engine.Envelope{ID: "evt-fake"}, nil
}

// fakeDB answers every GetItem with order (none when nil).
type fakeDB struct {
	mu    sync.Mutex
	order *api.Order
}

func (d *fakeDB) setOrder(o api.Order) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.order = &o
}

func (d *fakeDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.order == nil {
		return &dynamodb.GetItemOutput{}, nil
	}
	item, err := attributevalue.MarshalMap(*d.order)
	if err != nil {
		return nil, err
	}
	return &dynamodb.GetItemOutput{Item: item}, nil
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
