package relay

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Observer hears what the relay does; Metrics is the Prometheus one. Its
// methods must be safe for concurrent use and must not block. Embed
// NopObserver to observe only some calls.
type Observer interface {
	// Forwarded counts messages SQS accepted.
	Forwarded(n int)
	// Filtered counts records the filter dropped.
	Filtered(n int)
	// TransformFailed counts records the filter accepted but the transform
	// could not resolve.
	TransformFailed()
	// Rejected counts refusals of a message SQS blamed on the sender (each
	// refusal; the message is resent, then dead-lettered).
	Rejected()
	// SendError counts failed send attempts that will be retried.
	SendError()
	// DeadLettered counts records put on the dead-letter queue instead of
	// the target: never zero in a healthy system's alarm.
	DeadLettered()
	// Lag reports the age of the newest record forwarded.
	Lag(d time.Duration)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Forwarded(int)     {}
func (NopObserver) Filtered(int)      {}
func (NopObserver) TransformFailed()  {}
func (NopObserver) Rejected()         {}
func (NopObserver) SendError()        {}
func (NopObserver) DeadLettered()     {}
func (NopObserver) Lag(time.Duration) {}

// Metrics is an Observer that exports Prometheus metrics labelled by pipe.
type Metrics struct {
	forwarded, filtered, transformFailed, rejected, sendErrors, deadLetters *prometheus.CounterVec
	lag                                                                     *prometheus.GaugeVec
}

// Names of the relay's metrics that other parts read (the console's
// pipeline page).
const (
	MetricForwarded  = "bowline_relay_forwarded_total"
	MetricSendErrors = "bowline_relay_send_errors_total"
	MetricLag        = "bowline_relay_lag_seconds"
)

// NewMetrics registers the relay's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		forwarded:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricForwarded, Help: "Messages SQS accepted from the pipe."}, []string{"pipe"}),
		filtered:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_relay_filtered_total", Help: "Stream records the pipe's filter dropped."}, []string{"pipe"}),
		transformFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_relay_transform_errors_total", Help: "Records the filter accepted but the transform could not resolve."}, []string{"pipe"}),
		rejected:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_relay_rejected_total", Help: "Messages SQS refused as the sender's fault."}, []string{"pipe"}),
		sendErrors:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricSendErrors, Help: "Failed send attempts, retried."}, []string{"pipe"}),
		deadLetters:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_relay_dead_letters_total", Help: "Records put on the pipe's dead-letter queue instead of the target (alarm when it grows)."}, []string{"pipe"}),
		lag:             prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricLag, Help: "Age of the newest stream record forwarded."}, []string{"pipe"}),
	}
	reg.MustRegister(m.forwarded, m.filtered, m.transformFailed, m.rejected, m.sendErrors, m.deadLetters, m.lag)
	return m
}

// For returns the Observer of one pipe.
func (m *Metrics) For(pipe string) Observer { return pipeMetrics{m, pipe} }

type pipeMetrics struct {
	m    *Metrics
	pipe string
}

func (p pipeMetrics) Forwarded(n int)     { p.m.forwarded.WithLabelValues(p.pipe).Add(float64(n)) }
func (p pipeMetrics) Filtered(n int)      { p.m.filtered.WithLabelValues(p.pipe).Add(float64(n)) }
func (p pipeMetrics) TransformFailed()    { p.m.transformFailed.WithLabelValues(p.pipe).Inc() }
func (p pipeMetrics) Rejected()           { p.m.rejected.WithLabelValues(p.pipe).Inc() }
func (p pipeMetrics) SendError()          { p.m.sendErrors.WithLabelValues(p.pipe).Inc() }
func (p pipeMetrics) DeadLettered()       { p.m.deadLetters.WithLabelValues(p.pipe).Inc() }
func (p pipeMetrics) Lag(d time.Duration) { p.m.lag.WithLabelValues(p.pipe).Set(d.Seconds()) }
