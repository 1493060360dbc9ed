package console

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// TestTelemetryStoreIsBounded: past its bound the store forgets the thing
// whose newest sample is oldest, not a thing still reporting.
func TestTelemetryStoreIsBounded(t *testing.T) {
	ts := newTelemetryStore()
	ts.max = 3
	base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rec := func(thing string, at time.Time) ktypes.Record {
		b, err := json.Marshal(map[string]any{"tenant": "t1", "thing": thing, "seq": 1, "samples": []map[string]any{{"t": at, "kind": weightKind, "value": 1.0}}})
		if err != nil {
			t.Fatal(err)
		}
		return ktypes.Record{Data: b}
	}
	for i := range 5 {
		ts.addRecords([]ktypes.Record{rec(fmt.Sprintf("bowl-%d", i), base.Add(time.Duration(i)*time.Minute))})
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
