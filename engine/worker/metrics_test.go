package worker

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// gathered returns "name{label=value,...}" -> counter value or histogram
// sample count.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += ","
				}
				key += l.GetName() + "=" + l.GetValue()
			}
			key += "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestMetricsCountByOutcome(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.Claim("notify_buyer", ClaimTaken)
	m.Claim("notify_buyer", ClaimTaken)
	m.Claim("notify_buyer", ClaimCompleted)
	m.Handled("notify_buyer", HandledRetry, 20*time.Millisecond)
	m.Handled("notify_buyer", HandledOK, 10*time.Millisecond)
	m.DeadLetter("notify_buyer")
	m.Poison()
	m.Unmatched("com.order_created")
	got := gathered(t, reg)
	for key, want := range map[string]float64{
		"bowline_worker_claims_total{outcome=claimed,subscription=notify_buyer}":           2,
		"bowline_worker_claims_total{outcome=already_completed,subscription=notify_buyer}": 1,
		"bowline_worker_retries_total{subscription=notify_buyer}":                          1,
		"bowline_worker_dead_letters_total{subscription=notify_buyer}":                     1,
		"bowline_worker_poison_pills_total{}":                                              1,
		"bowline_worker_unmatched_total{type=com.order_created}":                           1,
		"bowline_worker_handler_seconds{outcome=ok,subscription=notify_buyer}":             1,
		"bowline_worker_handler_seconds{outcome=retry,subscription=notify_buyer}":          1,
	} {
		if got[key] != want {
			t.Errorf("%s = %v; want %v", key, got[key], want)
		}
	}
}
