package ingest

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Observer is told what happens to every message. Calls come from many
// goroutines and must not block. Metrics implements it; tests use it to see
// acknowledgements. Embed NopObserver to observe only some calls.
type Observer interface {
	// Received: a message arrived on kind's topic.
	Received(kind string)
	// Rejected: a message was refused for reason (it is dead-lettered and
	// acknowledged).
	Rejected(kind string, reason Reason)
	// Emitted: a device event was emitted through the engine.
	Emitted(typ string)
	// Duplicate: a redelivered device event that was already emitted.
	Duplicate(typ string)
	// GapRaised: a bowl.data_gap was raised for lane.
	GapRaised(lane string)
	// Acked is called once a message is done (its record may complete): the event
	// (or the dead letter of a rejection) and its seq are durable by then.
	Acked(a Ack)

	// What failures cost ingest:

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

// Ack is an acknowledged message, as Observer.Acked sees it.
type Ack struct {
	// Kind is the topic's kind, or "unknown" when the topic did not parse.
	Kind string
	// Tenant and Thing are the topic's; empty when it did not parse.
	Tenant, Thing string
	// Seq is the event's seq; zero for a rejected message.
	Seq uint64
	// SinceReceipt is the time since the message arrived; zero for a
	// rejected message.
	SinceReceipt time.Duration
	// ClockFix and ClockSkew say how ingest corrected the gateway's
	// clock (ClockFix); empty and zero when it did not.
	ClockFix  string
	ClockSkew time.Duration
}

// NopObserver observes nothing. Embed it in an Observer that needs only some
// of the calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Received(string)         {}
func (NopObserver) Rejected(string, Reason) {}
func (NopObserver) Emitted(string)          {}
func (NopObserver) Duplicate(string)        {}
func (NopObserver) GapRaised(string)        {}
func (NopObserver) Acked(Ack)               {}
func (NopObserver) Held(string, string)     {}
func (NopObserver) LetterLost(Reason)       {}
func (NopObserver) Suppressed(Reason)       {}

// multiObserver fans out to several observers.
type multiObserver []Observer

// Observers returns an Observer that tells each of obs in turn.
func Observers(obs ...Observer) Observer { return multiObserver(obs) }

func (m multiObserver) Received(k string) {
	for _, o := range m {
		o.Received(k)
	}
}
func (m multiObserver) Rejected(k string, r Reason) {
	for _, o := range m {
		o.Rejected(k, r)
	}
}
func (m multiObserver) Emitted(t string) {
	for _, o := range m {
		o.Emitted(t)
	}
}
func (m multiObserver) Duplicate(t string) {
	for _, o := range m {
		o.Duplicate(t)
	}
}
func (m multiObserver) GapRaised(l string) {
	for _, o := range m {
		o.GapRaised(l)
	}
}
func (m multiObserver) Acked(a Ack) {
	for _, o := range m {
		o.Acked(a)
	}
}

// Metrics are ingest's Prometheus metrics; it implements Observer.
type Metrics struct {
	received   *prometheus.CounterVec
	rejected   *prometheus.CounterVec
	emitted    *prometheus.CounterVec
	duplicates *prometheus.CounterVec
	gaps       *prometheus.CounterVec
	acked      *prometheus.CounterVec
	ackLatency *prometheus.HistogramVec
	clockFixes *prometheus.CounterVec
	failures   *failureMetrics
}

var _ Observer = (*Metrics)(nil)

// Names of ingest's metrics that other parts read (the console's pipeline
// page).
const (
	MetricMessagesReceived = "bowline_ingest_messages_received_total"
	MetricMessagesRejected = "bowline_ingest_messages_rejected_total"
	MetricDataGaps         = "bowline_ingest_data_gaps_total"
)

// NewMetrics registers ingest's metrics with reg (prometheus.DefaultRegisterer
// when nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	const ns, sub = "bowline", "ingest"
	m := &Metrics{
		received:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricMessagesReceived, Help: "Event messages received from the events stream, by kind."}, []string{"kind"}),
		rejected:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricMessagesRejected, Help: "Messages rejected, dead-lettered and acknowledged, by kind and reason."}, []string{"kind", "reason"}),
		emitted:    prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "events_emitted_total", Help: "Device events emitted through the engine, by type."}, []string{"type"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "events_duplicate_total", Help: "Redelivered device events that were already emitted, by type."}, []string{"type"}),
		gaps:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDataGaps, Help: "bowl.data_gap events raised, by lane."}, []string{"lane"}),
		acked:      prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "messages_acked_total", Help: "Messages done (their record may complete) after their data was durable, by kind."}, []string{"kind"}),
		ackLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "ack_latency_seconds", Help: "Time from receipt to done, by kind.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"kind"}),
		clockFixes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "clock_corrected_total", Help: "Messages whose times were corrected from a wrong gateway clock (sent_at), by kind and fix (ahead, unset)."}, []string{"kind", "fix"}),
	}
	m.failures = newFailureMetrics(reg, ns, sub)
	reg.MustRegister(m.received, m.rejected, m.emitted, m.duplicates, m.gaps, m.acked, m.ackLatency, m.clockFixes)
	return m
}

func (m *Metrics) Received(kind string) { m.received.WithLabelValues(kind).Inc() }
func (m *Metrics) Rejected(kind string, reason Reason) {
	m.rejected.WithLabelValues(kind, string(reason)).Inc()
}
func (m *Metrics) Emitted(typ string)    { m.emitted.WithLabelValues(typ).Inc() }
func (m *Metrics) Duplicate(typ string)  { m.duplicates.WithLabelValues(typ).Inc() }
func (m *Metrics) GapRaised(lane string) { m.gaps.WithLabelValues(lane).Inc() }

func (m *Metrics) Acked(a Ack) {
	m.acked.WithLabelValues(a.Kind).Inc()
	m.ackLatency.WithLabelValues(a.Kind).Observe(a.SinceReceipt.Seconds())
	if a.ClockFix != "" {
		m.clockFixes.WithLabelValues(a.Kind, a.ClockFix).Inc()
	}
}
