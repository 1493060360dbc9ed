package main

import (
	"slices"
	"testing"
	"time"
)

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
		if got := percentile(tt.ds, tt.p); got != tt.want {
			t.Errorf("percentile(%v, %v) = %v; want %v", tt.ds, tt.p, got, tt.want)
		}
	}
	s := summarize(ms(4, 1, 3, 2))
	if want := (summary{N: 4, P50: 2, P99: 4, Max: 4}); s != want {
		t.Fatalf("summarize = %+v; want %+v", s, want)
	}
}

func TestKillPlanIsDeterministic(t *testing.T) {
	a, b := newKillPlan(1, 20, time.Second), newKillPlan(1, 20, time.Second)
	if !slices.Equal(a.Runs, b.Runs) || a.UpAt != b.UpAt {
		t.Fatalf("newKillPlan(1) twice = %v / %v; want the same schedule", a.Runs, b.Runs)
	}
	if c := newKillPlan(2, 20, time.Second); slices.Equal(a.Runs, c.Runs) {
		t.Fatalf("seeds 1 and 2 gave the same schedule %v", a.Runs)
	}
	if a.UpAt != 13 || len(a.Runs) != 20 {
		t.Fatalf("plan of 20 kills: %d runs, broker up before run %d; want 20 and 13", len(a.Runs), a.UpAt)
	}
	var outage time.Duration
	for _, r := range a.Runs[:13] {
		if r < 200*time.Millisecond || r >= 900*time.Millisecond {
			t.Fatalf("run of %v outside [200ms, 900ms)", r)
		}
		outage += r
	}
	if a.Outage() != outage {
		t.Fatalf("Outage() = %v; want %v", a.Outage(), outage)
	}
}
