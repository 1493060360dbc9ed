package main

import (
	"slices"
	"testing"
	"time"
)

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
