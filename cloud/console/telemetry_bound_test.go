package console

import (
	"fmt"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/durable"
)

// TestTelemetryStoreIsBounded: past its bound the store forgets the thing
// whose newest sample is oldest, not a thing still reporting.
func TestTelemetryStoreIsBounded(t *testing.T) {
	ts := newTelemetryStore()
	ts.max = 3
	base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		at := base.Add(time.Duration(i) * time.Minute)
		ts.addPoints(fmt.Sprintf("bowl-%d", i), "t1", []durable.Point{{At: at, Kind: weightKind, Count: 1, Min: 1, Max: 1, Mean: 1, Last: 1}}, at)
	}
	if n := len(ts.thingTenants()); n != 3 {
		t.Fatalf("store holds %d things; want 3", n)
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, ok := ts.view(fmt.Sprintf("bowl-%d", i), time.Time{}); ok != want {
			t.Errorf("bowl-%d kept %v; want %v (the stalest are evicted)", i, ok, want)
		}
	}
}
