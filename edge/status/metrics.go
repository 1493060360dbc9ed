package status

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/edge/forward"
	"github.com/bowline-iot/bowline/edge/outbox"
)

// Metrics is the outbox's and the forwarder's Observer: it turns what they
// report into Prometheus metrics.
type Metrics struct {
	appended    *prometheus.CounterVec
	commits     prometheus.Counter
	commitSecs  prometheus.Histogram
	dropped     *prometheus.CounterVec
	published   *prometheus.CounterVec
	acked       *prometheus.CounterVec
	pubackSecs  prometheus.Histogram
	pubackLate  *prometheus.CounterVec
	connected   prometheus.Gauge
	connections prometheus.Counter
	cloudAcks   *prometheus.CounterVec
	cloudAcked  prometheus.Counter
}

// NewMetrics registers the edge metrics on reg, plus gauges read from
// stats at scrape time (backlog and bytes per lane).
func NewMetrics(reg prometheus.Registerer, stats func() (outbox.Stats, error)) *Metrics {
	m := &Metrics{
		appended:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_edge_outbox_appended_total", Help: "Records made durable in the outbox."}, []string{"lane"}),
		commits:     prometheus.NewCounter(prometheus.CounterOpts{Name: "bowline_edge_outbox_commits_total", Help: "Group commits (one fsync each)."}),
		commitSecs:  prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bowline_edge_outbox_commit_seconds", Help: "Group commit duration.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		dropped:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_edge_outbox_dropped_total", Help: "Records removed unsent (disk cap, ttl).", ConstLabels: nil}, []string{"lane", "reason"}),
		published:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_edge_mqtt_published_total", Help: "MQTT messages published."}, []string{"lane"}),
		acked:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_edge_mqtt_acked_records_total", Help: "Records acknowledged by PUBACK and removed from the outbox."}, []string{"lane"}),
		pubackSecs:  prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bowline_edge_mqtt_puback_seconds", Help: "Publish to PUBACK latency.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		pubackLate:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_edge_mqtt_puback_timeouts_total", Help: "Publishes that got no PUBACK within the deadline; each ended its session."}, []string{"lane"}),
		connected:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "bowline_edge_mqtt_connected", Help: "1 while connected to the broker."}),
		connections: prometheus.NewCounter(prometheus.CounterOpts{Name: "bowline_edge_mqtt_connections_total", Help: "Successful MQTT connections."}),
		cloudAcks:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_edge_cloud_acks_total", Help: "Cloud telemetry acknowledgements received (wire v2), applied or not (another outbox, undecodable)."}, []string{"result"}),
		cloudAcked:  prometheus.NewCounter(prometheus.CounterOpts{Name: "bowline_edge_cloud_acked_records_total", Help: "Telemetry records removed from the outbox on a cloud acknowledgement (wire v2)."}),
	}
	reg.MustRegister(m.appended, m.commits, m.commitSecs, m.dropped, m.published, m.acked, m.pubackSecs, m.pubackLate, m.connected, m.connections, m.cloudAcks, m.cloudAcked)
	for _, l := range outbox.Lanes {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bowline_edge_outbox_backlog", Help: "Records pending in the outbox.", ConstLabels: prometheus.Labels{"lane": l.String()}}, func() float64 {
			s, err := stats()
			if err != nil {
				return -1
			}
			return float64(s.Lane(l).Records)
		}))
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bowline_edge_outbox_bytes", Help: "Logical bytes pending in the outbox.", ConstLabels: prometheus.Labels{"lane": l.String()}}, func() float64 {
			s, err := stats()
			if err != nil {
				return -1
			}
			return float64(s.Lane(l).Bytes)
		}))
	}
	for _, g := range []struct {
		name, help string
		v          func(outbox.Stats) int64
	}{
		{"bowline_edge_outbox_fs_free_bytes", "Space left on the file system holding the outbox file (-1: unknown).", func(s outbox.Stats) int64 { return s.Budget.FSFreeBytes }},
		{"bowline_edge_outbox_effective_max_bytes", "The outbox cap in force: max_bytes lowered to what the disk can hold.", func(s outbox.Stats) int64 { return s.Budget.EffectiveMaxBytes }},
	} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help}, func() float64 {
			s, err := stats()
			if err != nil {
				return -1
			}
			return float64(g.v(s))
		}))
	}
	return m
}

var (
	_ outbox.Observer  = (*Metrics)(nil)
	_ forward.Observer = (*Metrics)(nil)
)

// Committed implements outbox.Observer.
func (m *Metrics) Committed(_, entries int, took time.Duration) {
	m.commits.Inc()
	m.commitSecs.Observe(took.Seconds())
	m.appended.WithLabelValues("all").Add(float64(entries))
}

// Dropped implements outbox.Observer.
func (m *Metrics) Dropped(lane outbox.Lane, _ string, n int, reason string) {
	m.dropped.WithLabelValues(lane.String(), reason).Add(float64(n))
}

// Published implements forward.Observer.
func (m *Metrics) Published(lane outbox.Lane, _ int) {
	m.published.WithLabelValues(lane.String()).Inc()
}

// Acked implements forward.Observer.
func (m *Metrics) Acked(lane outbox.Lane, n int, rtt time.Duration) {
	m.acked.WithLabelValues(lane.String()).Add(float64(n))
	m.pubackSecs.Observe(rtt.Seconds())
}

// PubackTimeout implements forward.Observer.
func (m *Metrics) PubackTimeout(lane outbox.Lane) { m.pubackLate.WithLabelValues(lane.String()).Inc() }

// CloudAck implements forward.Observer.
func (m *Metrics) CloudAck(applied bool, removed int) {
	result := "ignored"
	if applied {
		result = "applied"
	}
	m.cloudAcks.WithLabelValues(result).Inc()
	m.cloudAcked.Add(float64(removed))
}

// Connection implements forward.Observer.
func (m *Metrics) Connection(up bool) {
	if up {
		m.connected.Set(1)
		m.connections.Inc()
		return
	}
	m.connected.Set(0)
}
