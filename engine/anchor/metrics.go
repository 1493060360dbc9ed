package anchor

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Observer is told about every anchor round that completes (Metrics).
// Calls must not block. Embed NopObserver to observe only some calls.
type Observer interface {
	// RoundDone: a round ended at end with report rep.
	RoundDone(rep RoundReport, end time.Time)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) RoundDone(RoundReport, time.Time) {}

var _ Observer = (*Metrics)(nil)

// Metrics is an Observer that exports what anchor rounds did. Tenants are not a label
// (unbounded cardinality); the logs name them.
type Metrics struct {
	rounds   prometheus.Counter
	anchored prometheus.Counter
	broken   prometheus.Gauge
	failed   prometheus.Gauge
	last     prometheus.Gauge
	duration prometheus.Histogram
}

// NewMetrics registers the anchor job's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		rounds:   prometheus.NewCounter(prometheus.CounterOpts{Name: "bowline_anchor_rounds_total", Help: "Anchor rounds completed."}),
		anchored: prometheus.NewCounter(prometheus.CounterOpts{Name: "bowline_anchor_anchors_written_total", Help: "Anchors written."}),
		broken:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "bowline_anchor_broken_chains", Help: "Chains found broken in the last round (not anchored)."}),
		failed:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "bowline_anchor_failed_tenants", Help: "Tenants whose anchoring failed in the last round."}),
		last:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "bowline_anchor_last_round_timestamp_seconds", Help: "When the last round ended (Unix time)."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bowline_anchor_round_seconds", Help: "Duration of an anchor round.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)}),
	}
	for _, c := range []prometheus.Collector{m.rounds, m.anchored, m.broken, m.failed, m.last, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register anchor metrics: %w", err)
		}
	}
	return m, nil
}

// RoundDone records one completed round that ended at end.
func (m *Metrics) RoundDone(rep RoundReport, end time.Time) {
	m.rounds.Inc()
	m.anchored.Add(float64(rep.Anchored))
	m.broken.Set(float64(len(rep.Broken)))
	m.failed.Set(float64(len(rep.Failed)))
	m.last.Set(float64(end.UnixNano()) / 1e9)
	m.duration.Observe(rep.Elapsed.Seconds())
}
