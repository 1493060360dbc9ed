package detect

import (
	"testing"
	"time"
)

// TestActivityWindowStaysBoundedWhenTheClockStepsBack: the raw activity
// window is trimmed by time from its oldest end. If the gateway's clock
// steps back (time set after boot, the bridge re-syncing), the samples
// stamped before the step are "newer" than everything after it and held
// the window open until the clock caught up: an hour's step kept an hour
// of 50 Hz samples in memory, sorted on every evaluation and written in
// every detector snapshot.
func TestActivityWindowStaysBoundedWhenTheClockStepsBack(t *testing.T) {
	d := newDetector(t)
	now, seq := t0, uint32(0)
	flat := func(int) float64 { return 300 }
	feed(d, &now, &seq, flat, 10*time.Second)
	steady := len(d.st.Raw)
	now = now.Add(-time.Hour)
	feed(d, &now, &seq, flat, 30*time.Second)
	// 1.5 s at 50 Hz is 75 samples; allow a sample of slack either way.
	if got := len(d.st.Raw); got > steady+1 || len(d.st.RawT) != got {
		t.Fatalf("activity window after the clock stepped back 1h = %d samples (%d stamps); want at most %d, as before the step", got, len(d.st.RawT), steady+1)
	}
}

// TestActivityWindowIsCappedByCount: samples bunched in time (a device
// clock that stopped) cannot grow the window past maxActivitySamples.
func TestActivityWindowIsCappedByCount(t *testing.T) {
	d := newDetector(t)
	for i := range 3 * maxActivitySamples {
		d.Weight(Ref{Seq: uint32(i / 50), Index: uint16(i % 50)}, t0, 300)
	}
	if got := len(d.st.Raw); got != maxActivitySamples || len(d.st.RawT) != got {
		t.Fatalf("activity window of %d samples at one instant = %d (%d stamps); want %d", 3*maxActivitySamples, got, len(d.st.RawT), maxActivitySamples)
	}
}
