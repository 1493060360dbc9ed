package durable

import "github.com/prometheus/client_golang/prometheus"

// Observer is told what the consumer does. Calls come from Handle and must
// not block. Metrics implements it.
type Observer interface {
	// Record: a record of format (FormatBatch, FormatV1, or "unknown"
	// when it did not decode) was read.
	Record(format string)
	// Samples: n new samples were taken in (rolled up, acknowledged in
	// due course).
	Samples(n int)
	// Duplicates: n samples whose (thing, outbox, seq) was already seen.
	Duplicates(n int)
	// Rejected: a record was rejected for reason; lettered says whether a
	// dead letter was written (false: over the gateway's rate limit).
	Rejected(reason Reason, lettered bool)
	// LetterLost: DynamoDB refused a dead letter for good.
	LetterLost()
	// ClockFixed: a record's times were corrected for fix.
	ClockFixed(fix string)
	// Ack: an acknowledgement was published (outcome "ok") or not
	// ("error").
	Ack(outcome string)
	// StateWrite: a state row put ended in outcome (ok, conflict, error).
	StateWrite(outcome string)
	// RollupWrite: a rollup row put ended in outcome (ok, error).
	RollupWrite(outcome string)
	// GapRaised: a bowl.data_gap was raised.
	GapRaised()
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Record(string)         {}
func (NopObserver) Samples(int)           {}
func (NopObserver) Duplicates(int)        {}
func (NopObserver) Rejected(Reason, bool) {}
func (NopObserver) LetterLost()           {}
func (NopObserver) ClockFixed(string)     {}
func (NopObserver) Ack(string)            {}
func (NopObserver) StateWrite(string)     {}
func (NopObserver) RollupWrite(string)    {}
func (NopObserver) GapRaised()            {}

// Metrics are the consumer's Prometheus metrics (bowline_consumer_*).
type Metrics struct {
	records, rejected, clock, acks, state, rollup *prometheus.CounterVec
	samples, duplicates, lost, gaps               prometheus.Counter
}

var _ Observer = (*Metrics)(nil)

// MetricSamples names the consumer's count of new samples, which other
// parts read (the console's pipeline page).
const MetricSamples = "bowline_consumer_samples_total"

// NewMetrics registers the consumer's metrics with reg
// (prometheus.DefaultRegisterer when nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	const ns, sub = "bowline", "consumer"
	cv := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
	}
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help})
	}
	m := &Metrics{
		records:    cv("records_total", "Telemetry stream records read, by payload format (batch, v1, unknown).", "format"),
		rejected:   cv("rejections_total", "Records rejected, by reason and whether a dead letter was written.", "reason", "lettered"),
		clock:      cv("clock_corrected_total", "Records whose sample times were corrected from a wrong gateway clock, by fix (ahead, unset).", "fix"),
		acks:       cv("acks_published_total", "Acknowledgement messages published to gateways, by outcome.", "outcome"),
		state:      cv("state_writes_total", "Gateway state row puts, by outcome (ok, conflict, error).", "outcome"),
		rollup:     cv("rollup_writes_total", "Bowl rollup row puts, by outcome (ok, conflict, error).", "outcome"),
		samples:    prometheus.NewCounter(prometheus.CounterOpts{Name: MetricSamples, Help: "New samples taken in (not seen before in the stream)."}),
		duplicates: c("duplicate_samples_total", "Samples dropped as already seen (same thing, outbox and seq)."),
		lost:       c("letters_lost_total", "Rejected records whose dead letter DynamoDB refused for good."),
		gaps:       c("data_gaps_total", "bowl.data_gap events raised."),
	}
	reg.MustRegister(m.records, m.rejected, m.clock, m.acks, m.state, m.rollup, m.samples, m.duplicates, m.lost, m.gaps)
	return m
}

func (m *Metrics) Record(format string) { m.records.WithLabelValues(format).Inc() }
func (m *Metrics) Samples(n int)        { m.samples.Add(float64(n)) }
func (m *Metrics) Duplicates(n int)     { m.duplicates.Add(float64(n)) }
func (m *Metrics) Rejected(r Reason, lettered bool) {
	l := "false"
	if lettered {
		l = "true"
	}
	m.rejected.WithLabelValues(string(r), l).Inc()
}
func (m *Metrics) LetterLost()           { m.lost.Inc() }
func (m *Metrics) ClockFixed(fix string) { m.clock.WithLabelValues(fix).Inc() }
func (m *Metrics) Ack(outcome string)    { m.acks.WithLabelValues(outcome).Inc() }
func (m *Metrics) StateWrite(o string)   { m.state.WithLabelValues(o).Inc() }
func (m *Metrics) RollupWrite(o string)  { m.rollup.WithLabelValues(o).Inc() }
func (m *Metrics) GapRaised()            { m.gaps.Inc() }
