package chaos

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestScheduleIsSeeded: the same seed draws the same schedule, sorted by
// time and inside the window; another seed draws another.
func TestScheduleIsSeeded(t *testing.T) {
	a := Schedule(7, 60, 5*time.Minute, 2, 2, 2)
	b := Schedule(7, 60, 5*time.Minute, 2, 2, 2)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("Schedule(7) differs between two calls; want the same schedule")
	}
	if c := Schedule(8, 60, 5*time.Minute, 2, 2, 2); reflect.DeepEqual(a, c) {
		t.Fatal("Schedule(8) = Schedule(7); want another schedule")
	}
	kinds := map[string]int{}
	for i, f := range a {
		if f.At < 0 || f.At >= 5*time.Minute || (i > 0 && f.At < a[i-1].At) {
			t.Fatalf("fault %d at %v: want sorted, inside [0, 5m)", i, f.At)
		}
		kinds[f.Kind]++
	}
	killed := map[string]bool{}
	for _, f := range Schedule(2, 14, 30*time.Second, 2, 2, 2) {
		if f.Kind == FaultKill {
			killed[f.Target] = true
		}
	}
	for _, p := range telemetryPath {
		if !killed[p] {
			t.Errorf("Schedule(2, 14) kills %v; want a kill of %s", killed, p)
		}
	}
	if len(a) != 60 || len(kinds) < 6 {
		t.Errorf("Schedule(7, 60) = %d faults of %d kinds (%v); want 60 of at least 6 kinds", len(a), len(kinds), kinds)
	}
	var tl strings.Builder
	PrintTimeline(&tl, 7, a[:3])
	if !strings.Contains(tl.String(), "seed 7, 3 faults") {
		t.Errorf("timeline = %q; want its header to name the seed and the count", tl.String())
	}
}
