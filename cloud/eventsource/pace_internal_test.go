package eventsource

import (
	"testing"
	"time"
)

// A shard is read at most five times a second and 2 MB/s, and after an
// empty read only every PollInterval (kinesis-local does not throttle
// reads, so the pacing is checked here).
func TestReadGapKeepsGetRecordsQuotas(t *testing.T) {
	r := &Runner{cfg: Config{PollInterval: time.Second}}
	for _, tc := range []struct {
		bytes, records int
		want           time.Duration
	}{
		{0, 0, time.Second},
		{100, 1, 200 * time.Millisecond},
		{4 << 20, 100, 2 * time.Second},
		{1 << 20, 10, 500 * time.Millisecond},
	} {
		if got := r.readGap(tc.bytes, tc.records); got != tc.want {
			t.Errorf("readGap(%d bytes, %d records) = %v; want %v", tc.bytes, tc.records, got, tc.want)
		}
	}
}
