package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of an order with a repeated Idempotency-Key, reported to
// Observer.IdempotencyRepeat.
const (
	IdempotencyReplayed = "replayed" // the same body: the first answer again
	IdempotencyConflict = "conflict" // another body: 409
)

// Observer hears what the API does; Metrics is the Prometheus one. Its
// methods must be safe for concurrent use and must not block. Embed
// NopObserver to observe only some calls.
type Observer interface {
	// Request: a request to route (its pattern's path) was answered with
	// code after d.
	Request(route string, code int, d time.Duration)
	// Emitted: the API committed an event of typ.
	Emitted(typ string)
	// WebhookRejected: a payment webhook was refused before processing,
	// for reason (its error code).
	WebhookRejected(reason string)
	// WebhookDuplicate: a payment webhook for an already processed
	// payment (nothing emitted).
	WebhookDuplicate()
	// IdempotencyRepeat: an order came with a repeated Idempotency-Key
	// (IdempotencyReplayed, IdempotencyConflict).
	IdempotencyRepeat(outcome string)
	// PaymentMismatch: a signed payment's amount or currency differ from
	// its order's: reason amount or currency (not marked paid), or
	// duplicate_amount, duplicate_currency (a repeat of the payment that
	// paid the order, answered duplicate).
	PaymentMismatch(reason string)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Request(string, int, time.Duration) {}
func (NopObserver) Emitted(string)                     {}
func (NopObserver) WebhookRejected(string)             {}
func (NopObserver) WebhookDuplicate()                  {}
func (NopObserver) IdempotencyRepeat(string)           {}
func (NopObserver) PaymentMismatch(string)             {}

// Metrics is an Observer exporting the API's Prometheus metrics.
type Metrics struct {
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	events     *prometheus.CounterVec
	rejected   *prometheus.CounterVec
	duplicates prometheus.Counter
	idem       *prometheus.CounterVec
	mismatch   *prometheus.CounterVec
}

var _ Observer = (*Metrics)(nil)

// NewMetrics registers the API's metrics with reg. Serve reg's Gatherer
// with MetricsHandler (Config.Gatherer), never on the API's listener.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bowline_api_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "bowline_api_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"route"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bowline_api_events_emitted_total", Help: "Events the API committed, by type.",
		}, []string{"type"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bowline_api_webhooks_rejected_total", Help: "Payment webhooks refused before processing, by reason.",
		}, []string{"reason"}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bowline_api_webhook_duplicates_total", Help: "Payment webhooks for an already processed payment (nothing emitted).",
		}),
		idem: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bowline_api_idempotency_repeats_total", Help: "Orders with a repeated Idempotency-Key, by outcome (replayed, conflict).",
		}, []string{"outcome"}),
		mismatch: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bowline_api_payment_mismatches_total", Help: "Signed payments whose amount or currency differ from their order's, by reason: amount, currency (not marked paid), duplicate_amount, duplicate_currency (a repeat of the payment that paid the order, answered duplicate).",
		}, []string{"reason"}),
	}
	reg.MustRegister(m.requests, m.duration, m.events, m.rejected, m.duplicates, m.idem, m.mismatch)
	return m
}

func (m *Metrics) Request(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}
func (m *Metrics) Emitted(typ string)               { m.events.WithLabelValues(typ).Inc() }
func (m *Metrics) WebhookRejected(reason string)    { m.rejected.WithLabelValues(reason).Inc() }
func (m *Metrics) WebhookDuplicate()                { m.duplicates.Inc() }
func (m *Metrics) IdempotencyRepeat(outcome string) { m.idem.WithLabelValues(outcome).Inc() }
func (m *Metrics) PaymentMismatch(reason string)    { m.mismatch.WithLabelValues(reason).Inc() }

// instrument wraps h, telling the Observer of each request to route.
func (a *API) instrument(route string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h(sw, r)
		a.obs.Request(route, sw.status, time.Since(start))
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
