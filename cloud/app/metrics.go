package app

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/engine/anchor"
	"github.com/bowline-iot/bowline/engine/recordchange"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
)

// Each part's Prometheus metrics (its Observer adapter) are registered on
// the App's Registry here, once per Open, by the App's constructor of that
// part: a part built with no Observer of its own is observed by them. A
// caller that observes more (bowline dev's status line) fans out to the
// accessor's value, so no process registers a part's metrics by hand.

// IngestMetrics returns the events consumer's metrics (cloud/ingest) on
// the App's registry, registering them on first use.
func (a *App) IngestMetrics() *ingest.Metrics {
	return mustMetrics(a, "ingest", ingest.NewMetrics)
}

// TelemetryConsumerMetrics returns the telemetry consumer's metrics
// (cloud/durable, bowline_consumer_*) on the App's registry, registering
// them on first use.
func (a *App) TelemetryConsumerMetrics() *durable.Metrics {
	return mustMetrics(a, "consumer", durable.NewMetrics)
}

// RulesMetrics returns the rules stand-in's metrics (cloud/rules) on the
// App's registry, registering them on first use.
func (a *App) RulesMetrics() *rules.Metrics {
	return mustMetrics(a, "rules", rules.NewMetrics)
}

// RelayMetrics returns the pipes' metrics (engine/relay, one series per
// pipe: For) on the App's registry, registering them on first use.
func (a *App) RelayMetrics() *relay.Metrics {
	return mustMetrics(a, "relay", relay.NewMetrics)
}

// WorkerMetrics returns the DURABLE-lane worker's metrics (engine/worker)
// on the App's registry, registering them on first use.
func (a *App) WorkerMetrics() *worker.Metrics {
	return mustMetrics(a, "worker", worker.NewMetrics)
}

// RecordChangesMetrics returns the BEST_EFFORT consumer's metrics
// (engine/recordchange) on the App's registry, registering them on first
// use.
func (a *App) RecordChangesMetrics() *recordchange.Metrics {
	return mustMetrics(a, "record-changes", recordchange.NewMetrics)
}

// AnchorMetrics returns the anchor ledger's metrics (engine/anchor) on the
// App's registry, registering them on first use.
func (a *App) AnchorMetrics() (*anchor.Metrics, error) {
	return metricsOf(a, "anchor", anchor.NewMetrics)
}

// mustMetrics is metricsOf for the parts whose NewMetrics panics on a
// clash instead of returning an error.
func mustMetrics[M any](a *App, name string, build func(prometheus.Registerer) M) M {
	m, _ := metricsOf(a, name, func(r prometheus.Registerer) (M, error) { return build(r), nil })
	return m
}

// metricsOf returns the metrics called name, built by build on a.Registry
// the first time any App of this Open asks (its part views share the
// registry).
func metricsOf[M any](a *App, name string, build func(prometheus.Registerer) (M, error)) (M, error) {
	a.shared.mu.Lock()
	defer a.shared.mu.Unlock()
	if m, ok := a.shared.metrics[name]; ok {
		return m.(M), nil
	}
	m, err := build(a.Registry)
	if err != nil {
		var zero M
		return zero, fmt.Errorf("%s metrics: %w", name, err)
	}
	a.shared.metrics[name] = m
	return m, nil
}
