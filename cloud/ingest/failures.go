package ingest

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/engine"
)

// failureCause classes a transient failure for metrics and logs:
// "unavailable" (DynamoDB denies access or a table is missing: an operator
// must act; engine.IsUnavailable), "throttled", or "other".
func failureCause(err error) string {
	switch {
	case engine.IsUnavailable(err):
		return "unavailable"
	case errors.Is(err, engine.ErrThrottled) || retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool():
		return "throttled"
	}
	return "other"
}

func (m multiObserver) Held(op, cause string) {
	for _, o := range m {
		o.Held(op, cause)
	}
}

func (m multiObserver) LetterLost(r Reason) {
	for _, o := range m {
		o.LetterLost(r)
	}
}

func (m multiObserver) Suppressed(r Reason) {
	for _, o := range m {
		o.Suppressed(r)
	}
}

// failureMetrics are the counters behind Metrics' Held, LetterLost and
// Suppressed.
type failureMetrics struct {
	held       *prometheus.CounterVec
	lost       *prometheus.CounterVec
	suppressed *prometheus.CounterVec
}

func newFailureMetrics(reg prometheus.Registerer, ns, sub string) *failureMetrics {
	f := &failureMetrics{
		held: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "held_retries_total",
			Help: "Retries while a message was held unacknowledged, by operation (emit, registry, dead_letter) and cause (unavailable: access denied or a missing table, an operator must act; throttled; other)."}, []string{"op", "cause"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "dead_letters_lost_total",
			Help: "Rejected messages acknowledged without a dead letter because it could not be written in time, by reason. Alarm on any."}, []string{"reason"}),
		suppressed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rejections_suppressed_total",
			Help: "Rejections past a device's per-window dead-letter limit, acknowledged and counted only, by reason."}, []string{"reason"}),
	}
	reg.MustRegister(f.held, f.lost, f.suppressed)
	return f
}

func (m *Metrics) Held(op, cause string)    { m.failures.held.WithLabelValues(op, cause).Inc() }
func (m *Metrics) LetterLost(reason Reason) { m.failures.lost.WithLabelValues(string(reason)).Inc() }
func (m *Metrics) Suppressed(reason Reason) {
	m.failures.suppressed.WithLabelValues(string(reason)).Inc()
}
