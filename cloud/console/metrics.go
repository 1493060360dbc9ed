package console

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
)

// pipelineMetrics are the metrics the pipeline page reads, named by the
// constants of the parts that register them. gather keeps only these, so
// a name read and not listed here reads as missing.
var pipelineMetrics = []string{
	ingest.MetricMessagesReceived, ingest.MetricMessagesRejected, ingest.MetricDataGaps,
	durable.MetricSamples, rules.MetricErrors,
	engine.MetricEventsCommitted, engine.MetricEmitFailures,
	relay.MetricForwarded, relay.MetricLag, relay.MetricSendErrors,
	worker.MetricReceived, worker.MetricHandlerSeconds, worker.MetricRetries, worker.MetricDeadLetters,
}

// Metrics returns the names of the metrics the pipeline page reads from
// Config.Gatherer. A stage whose metrics the registry lacks shows "not
// running in this process" (bowline dev registers them all; bowline api
// the engine's). cloud/console's tests check that the parts register
// every one.
func Metrics() []string { return slices.Clone(pipelineMetrics) }

// metricPoint is one gathered series: its labels and value (a counter's or
// gauge's value, a histogram's or summary's count).
type metricPoint struct {
	labels map[string]string
	value  float64
}

// snapshot is one gathering of the process's registry, by metric name.
type snapshot map[string][]metricPoint

// gather reads the pipeline's metrics (pipelineMetrics) from g into a
// snapshot; nil g gives an empty one. The sampler keeps 60 of them, so
// the rest of the registry (the Go runtime's series, the API's) is left
// out.
func gather(g prometheus.Gatherer) snapshot {
	s := snapshot{}
	if g == nil {
		return s
	}
	fams, _ := g.Gather() // a partial gathering is still worth showing
	for _, f := range fams {
		if !slices.Contains(pipelineMetrics, f.GetName()) {
			continue
		}
		for _, m := range f.GetMetric() {
			p := metricPoint{labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				p.labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				p.value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				p.value = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				p.value = float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_SUMMARY:
				p.value = float64(m.GetSummary().GetSampleCount())
			default:
				p.value = m.GetUntyped().GetValue()
			}
			s[f.GetName()] = append(s[f.GetName()], p)
		}
	}
	return s
}

// has reports whether the registry holds the metric at all.
func (s snapshot) has(name string) bool { _, ok := s[name]; return ok }

// sum adds the metric's series whose labels match every "k=v" in match
// (a v ending in * matches by prefix; "k!=v" excludes).
func (s snapshot) sum(name string, match ...string) float64 {
	total := 0.0
	for _, p := range s[name] {
		if labelsMatch(p.labels, match) {
			total += p.value
		}
	}
	return total
}

// max returns the largest matching value.
func (s snapshot) max(name string, match ...string) float64 {
	m := 0.0
	for _, p := range s[name] {
		if labelsMatch(p.labels, match) && p.value > m {
			m = p.value
		}
	}
	return m
}

func labelsMatch(labels map[string]string, match []string) bool {
	for _, m := range match {
		if k, v, ok := strings.Cut(m, "!="); ok {
			if labels[k] == v {
				return false
			}
			continue
		}
		k, v, _ := strings.Cut(m, "=")
		got := labels[k]
		if p, ok := strings.CutSuffix(v, "*"); ok {
			if !strings.HasPrefix(got, p) {
				return false
			}
		} else if got != v {
			return false
		}
	}
	return true
}
