package ingest

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/engine"
)

// FailureObserver is told what failures cost ingest; an Observer may also
// implement it (Metrics does). Calls come from many goroutines and must not
// block.
type FailureObserver interface {
	// Held: a message stays unacknowledged for another retry of op
	// ("emit", "registry", "dead_letter") after a failure of cause
	// (failureCause: unavailable, throttled, other).
	Held(op, cause string)
	// LetterLost: a rejected message was acknowledged without its dead
	// letter, which could not be written within Config.Rejections. Alarm
	// on it: the log line has the message's sha256.
	LetterLost(reason Reason)
	// Suppressed: a rejection past its device's per-window limit was
	// acknowledged and counted, not stored.
	Suppressed(reason Reason)
}

type nopFailures struct{}

func (nopFailures) Held(string, string) {}
func (nopFailures) LetterLost(Reason)   {}
func (nopFailures) Suppressed(Reason)   {}

// failures is the Observer as a FailureObserver, or one that observes
// nothing.
func (in *Ingester) failures() FailureObserver {
	if f, ok := in.cfg.Observer.(FailureObserver); ok {
		return f
	}
	return nopFailures{}
}

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
		if f, ok := o.(FailureObserver); ok {
			f.Held(op, cause)
		}
	}
}

func (m multiObserver) LetterLost(r Reason) {
	for _, o := range m {
		if f, ok := o.(FailureObserver); ok {
			f.LetterLost(r)
		}
	}
}

func (m multiObserver) Suppressed(r Reason) {
	for _, o := range m {
		if f, ok := o.(FailureObserver); ok {
			f.Suppressed(r)
		}
	}
}

// failureMetrics are the counters behind Metrics' FailureObserver.
type failureMetrics struct {
	held       *prometheus.CounterVec
	lost       *prometheus.CounterVec
	suppressed *prometheus.CounterVec
}

var (
	_ FailureObserver = (*Metrics)(nil)
	_ FailureObserver = multiObserver(nil)
)

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
