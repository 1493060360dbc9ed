package console

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metricPoint is one gathered series: its labels and value (a counter's or
// gauge's value, a histogram's or summary's count).
type metricPoint struct {
	labels map[string]string
	value  float64
}

// snapshot is one gathering of the process's registry, by metric name.
type snapshot map[string][]metricPoint

// gather reads g into a snapshot; nil g gives an empty one.
func gather(g prometheus.Gatherer) snapshot {
	s := snapshot{}
	if g == nil {
		return s
	}
	fams, _ := g.Gather() // a partial gathering is still worth showing
	for _, f := range fams {
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
