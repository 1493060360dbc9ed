package bridge

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// Metrics is an Observer that records Prometheus metrics. Pass it as
// Config.Observer. Device ids are labels: a gateway serves a handful of bowls.
type Metrics struct {
	dropped    *prometheus.CounterVec
	gaps       *prometheus.CounterVec
	duplicates *prometheus.CounterVec
	delivered  *prometheus.CounterVec
	failures   *prometheus.CounterVec
	acks       *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	ackedSeq   *prometheus.GaugeVec
	rtt        *prometheus.GaugeVec
}

var _ Observer = (*Metrics)(nil)

// NewMetrics registers the bridge's metrics (prefix bowline_bridge_) with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_bridge_frames_dropped_total",
			Help: "Frames dropped by reason (decoder reasons, before_hello, unexpected_type)."}, []string{"reason"}),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_bridge_sequence_gaps_total",
			Help: "Frames dropped because an earlier sequence number was missing."}, []string{"device"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_bridge_duplicates_total",
			Help: "Retransmitted frames dropped as already accepted."}, []string{"device"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_bridge_records_delivered_total",
			Help: "Records the sink confirmed durable."}, []string{"device"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_bridge_deliver_failures_total",
			Help: "Sink Deliver calls that failed and will be retried."}, []string{"device"}),
		acks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_bridge_acks_sent_total",
			Help: "Cumulative acks sent to the MCU, by kind (ack or resend)."}, []string{"device", "kind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bowline_bridge_deliver_seconds",
			Help: "Time the sink took to make a batch durable.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"device"}),
		ackedSeq: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bowline_bridge_acked_seq",
			Help: "Last cumulative sequence number acknowledged."}, []string{"device"}),
		rtt: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bowline_bridge_clock_rtt_seconds",
			Help: "Round trip of the last time sync."}, []string{"device"}),
	}
	for _, c := range []prometheus.Collector{m.dropped, m.gaps, m.duplicates, m.delivered, m.failures, m.acks, m.latency, m.ackedSeq, m.rtt} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range frame.Reasons() {
		m.dropped.WithLabelValues(r.String())
	}
	m.dropped.WithLabelValues(DropBeforeHello)
	m.dropped.WithLabelValues(DropUnexpectedType)
	return m, nil
}

func (m *Metrics) FrameDropped(reason string)             { m.dropped.WithLabelValues(reason).Inc() }
func (m *Metrics) SequenceGap(device string, _, _ uint32) { m.gaps.WithLabelValues(device).Inc() }
func (m *Metrics) Duplicate(device string, _ uint32)      { m.duplicates.WithLabelValues(device).Inc() }
func (m *Metrics) DeliverFailed(device string, _ error)   { m.failures.WithLabelValues(device).Inc() }
func (m *Metrics) ClockOffset(device string, _, rtt time.Duration) {
	m.rtt.WithLabelValues(device).Set(rtt.Seconds())
}

func (m *Metrics) Delivered(device string, n int, took time.Duration) {
	m.delivered.WithLabelValues(device).Add(float64(n))
	m.latency.WithLabelValues(device).Observe(took.Seconds())
}

func (m *Metrics) AckSent(device string, cum uint32, resend bool) {
	kind := "ack"
	if resend {
		kind = "resend"
	}
	m.acks.WithLabelValues(device, kind).Inc()
	m.ackedSeq.WithLabelValues(device).Set(float64(cum))
}
