package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's Prometheus metrics. The request counters wrap every
// route (instrument); the rest are hooks the handlers call.
type metrics struct {
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	events     *prometheus.CounterVec
	rejected   *prometheus.CounterVec
	duplicates prometheus.Counter
	idem       *prometheus.CounterVec
	mismatch   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
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

func (m *metrics) emitted(typ string)            { m.events.WithLabelValues(typ).Inc() }
func (m *metrics) webhookRejected(reason string) { m.rejected.WithLabelValues(reason).Inc() }
func (m *metrics) webhookDuplicate()             { m.duplicates.Inc() }
func (m *metrics) idempotency(outcome string)    { m.idem.WithLabelValues(outcome).Inc() }
func (m *metrics) paymentMismatch(reason string) { m.mismatch.WithLabelValues(reason).Inc() }

// instrument wraps h, counting its requests under route.
func (m *metrics) instrument(route string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h(sw, r)
		m.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
		m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
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
