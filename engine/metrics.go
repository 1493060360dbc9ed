package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is an Observer that exports Prometheus metrics. Tenants are not a
// label (unbounded cardinality).
type Metrics struct {
	committed *prometheus.CounterVec
	groupSize prometheus.Histogram
	attempts  prometheus.Histogram
	latency   prometheus.Histogram
	failures  *prometheus.CounterVec
}

var _ Observer = (*Metrics)(nil)

// Names of the engine's metrics that other parts read (the console's
// pipeline page).
const (
	MetricEventsCommitted = "bowline_engine_events_committed_total"
	MetricEmitFailures    = "bowline_engine_emit_failures_total"
)

// NewMetrics registers the engine's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		committed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricEventsCommitted, Help: "Events committed by Emit.",
		}, nil),
		groupSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bowline_engine_group_events", Help: "Events per group-commit transaction.",
			Buckets: []float64{1, 2, 4, 8, 16, 32},
		}),
		attempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bowline_engine_group_attempts", Help: "TransactWriteItems calls per committed group.",
			Buckets: []float64{1, 2, 3, 5, 8, 13, 21},
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bowline_engine_group_commit_seconds", Help: "Time from taking a group to its commit.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricEmitFailures, Help: "Emits that returned an error, by reason.",
		}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{m.committed, m.groupSize, m.attempts, m.latency, m.failures} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register engine metrics: %w", err)
		}
	}
	return m, nil
}

// Committed implements Observer.
func (m *Metrics) Committed(_ string, events, attempts int, elapsed time.Duration) {
	m.committed.WithLabelValues().Add(float64(events))
	m.groupSize.Observe(float64(events))
	m.attempts.Observe(float64(attempts))
	m.latency.Observe(elapsed.Seconds())
}

// Failed implements Observer.
func (m *Metrics) Failed(_, _ string, err error) {
	m.failures.WithLabelValues(FailureReason(err)).Inc()
}

// FailureReason names the class of an Emit error, for metrics and logs:
// duplicate, condition_failed, inline_handler, throttled, deadline,
// canceled, unknown_outcome, rejected, unavailable, invalid, or other.
func FailureReason(err error) string {
	switch {
	case errors.Is(err, ErrDuplicate):
		return "duplicate"
	case errors.Is(err, ErrConditionFailed):
		return "condition_failed"
	case errors.Is(err, ErrInlineHandler):
		return "inline_handler"
	case errors.Is(err, ErrThrottled):
		return "throttled"
	case errors.Is(err, ErrUnknownOutcome):
		return "unknown_outcome"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, ErrRejected):
		return "rejected"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrNoTenant), errors.Is(err, ErrInvalidTenant), errors.Is(err, ErrInvalidType),
		errors.Is(err, ErrUnknownType), errors.Is(err, ErrInvalidPayload), errors.Is(err, ErrPayloadTooLarge),
		errors.Is(err, ErrTooManyWrites), errors.Is(err, ErrWritesTooLarge), errors.Is(err, ErrInvalidWrite),
		errors.Is(err, ErrEventsTableWrite):
		return "invalid"
	}
	return "other"
}
