package latency

import (
	"testing"
	"time"
)

func TestSummarizeNearestRank(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond // 100..1 ms, unsorted
	}
	got := Summarize(ds)
	want := Summary{N: 100, P50: 50, P90: 90, P99: 99, Max: 100}
	if got != want {
		t.Fatalf("Summarize(1..100 ms) = %+v; want %+v", got, want)
	}
	if got := Summarize(nil); got != (Summary{}) {
		t.Fatalf("Summarize(nil) = %+v; want zero", got)
	}
	one := Summarize([]time.Duration{1500 * time.Microsecond})
	if one.P50 != 1.5 || one.P99 != 1.5 || one.Max != 1.5 || one.N != 1 {
		t.Fatalf("Summarize(1.5 ms) = %+v; want every percentile 1.5", one)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 99, 4 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := Percentile(tt.ds, tt.p); got != tt.want {
			t.Errorf("Percentile(%v, %v) = %v; want %v", tt.ds, tt.p, got, tt.want)
		}
	}
	s := Summarize(ms(4, 1, 3, 2))
	if want := (Summary{N: 4, P50: 2, P90: 4, P99: 4, Max: 4}); s != want {
		t.Fatalf("Summarize = %+v; want %+v", s, want)
	}
}
