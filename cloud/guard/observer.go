package guard

import "github.com/prometheus/client_golang/prometheus"

// Observer hears what a Guard decides; Metrics is the Prometheus one. Its
// methods must be safe for concurrent use and must not block. Embed
// NopObserver to observe only some calls.
type Observer interface {
	// Failed: a wrong credential of kind (KindBearer, ...) was presented.
	Failed(kind string)
	// Refused: a request presenting a credential of kind was refused
	// because its source spent its tries.
	Refused(kind string)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Failed(string)  {}
func (NopObserver) Refused(string) {}

// Names of the guard's metrics (docs/security.md, "Brute force").
const (
	MetricFailures = "bowline_auth_failures_total"
	MetricRefused  = "bowline_auth_refused_total"
)

// Metrics is an Observer exporting Prometheus metrics.
type Metrics struct {
	failed, refused *prometheus.CounterVec
}

var _ Observer = (*Metrics)(nil)

// NewMetrics registers the guard's metrics with reg. A process has one
// Guard, shared by the API and the console (cloud/app), so one Metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricFailures, Help: "Wrong credentials presented, by kind (bearer, ops, console).",
		}, []string{"kind"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRefused, Help: "Requests refused with 429 because their source spent its tries, by kind.",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.failed, m.refused)
	return m
}

func (m *Metrics) Failed(kind string)  { m.failed.WithLabelValues(kind).Inc() }
func (m *Metrics) Refused(kind string) { m.refused.WithLabelValues(kind).Inc() }
