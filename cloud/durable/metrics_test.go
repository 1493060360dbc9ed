package durable

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics count what the consumer does: records, samples,
// duplicates, rejections by reason, acks, state and rollup writes, gaps.
func TestMetricsCount(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	r := newRig(t, func(c *Config) { c.Observer = m; c.RollupEvery = 0 })
	p := encode(t, "ob1", t0, weights("gw-1:a", 1, 10, t0))
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, p), r.record(t, tenant, "gw-1", t0, p),
		r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-2:a", 1, 1, t0))))
	for name, want := range map[string]float64{
		"records_total":           3,
		"samples_total":           10,
		"duplicate_samples_total": 10,
		"rejections_total":        1,
		"acks_published_total":    1,
		"state_writes_total":      1,
		"rollup_writes_total":     1,
		"data_gaps_total":         0,
	} {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var got float64
		for _, mf := range mfs {
			if mf.GetName() != "bowline_consumer_"+name {
				continue
			}
			for _, x := range mf.GetMetric() {
				got += x.GetCounter().GetValue()
			}
		}
		if got != want {
			t.Errorf("bowline_consumer_%s = %v; want %v", name, got, want)
		}
	}
}
