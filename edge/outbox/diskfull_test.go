package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// smallDisk mounts a tmpfs of size bytes and unmounts it at the end of
// the test. It needs root (CAP_SYS_ADMIN); without it the test skips, and
// fails under CI=true (testkit.Need).
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		testkit.Need(t, fmt.Errorf("mount a %d-byte tmpfs at %s (needs root): %w", size, dir, err))
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestFullDiskDropsOldestTelemetryAndKeepsEvents fills a 4 MiB file system
// with an outbox whose logical cap (64 MiB) it could never hold. Every
// append must succeed: the disk budget lowers the cap, the oldest telemetry
// goes, bowl.telemetry_dropped reports name exactly the seqs that went,
// what is left is exactly the rest, and no event is lost.
func TestFullDiskDropsOldestTelemetryAndKeepsEvents(t *testing.T) {
	ctx := context.Background()
	const diskSize = 4 << 20
	dir := smallDisk(t, diskSize)
	o := openTest(t, Config{Path: filepath.Join(dir, "outbox.db"), MaxBytes: 64 << 20, TelemetryTTL: -1})
	things := []string{"bowl-a", "bowl-b"}
	appended := map[string]int{}
	events := map[string][]string{}
	const perAppend = 500
	// 240,000 samples of about 51 bytes: 12 MiB of records, three times
	// the disk.
	for i := range 240 {
		for _, th := range things {
			start := t0.Add(time.Duration(appended[th]) * 20 * time.Millisecond)
			batch := samples(th, perAppend, start)
			if i%20 == 0 {
				id := fmt.Sprintf("refill-%d", i)
				batch = append(batch, Entry{Lane: Events, Thing: th, At: start, Type: "bowl.refilled", ID: id, Data: []byte(`{"grams_added":120}`)})
				events[th] = append(events[th], id)
			}
			if err := o.Append(ctx, batch, nil); err != nil {
				t.Fatalf("Append %d of %s on a full disk: %v; want the oldest telemetry dropped", i, th, err)
			}
			appended[th] += perAppend
		}
	}
	s, err := o.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if !s.Budget.DiskLimited || s.Budget.EffectiveMaxBytes >= s.MaxBytes || s.Budget.FSFreeBytes < 0 || s.Budget.FSFreeBytes > diskSize {
		t.Errorf("Stats().Budget = %+v; want disk limited, effective cap under %d, file system free in [0, %d]", s.Budget, s.MaxBytes, diskSize)
	}
	var droppedTotal int64
	for _, th := range things {
		evs, err := o.Events(ctx, th, 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		next := uint64(1) // the first seq not yet reported dropped
		for _, e := range evs {
			if e.Type != DroppedType {
				kept = append(kept, e.ID)
				continue
			}
			var r DropReport
			if err := json.Unmarshal(e.Data, &r); err != nil {
				t.Fatal(err)
			}
			if r.Reason != ReasonDiskCap || r.FromSeq != next || int(r.ToSeq-r.FromSeq+1) != r.Count {
				t.Fatalf("%s drop report %+v; want disk_cap from seq %d, count = to-from+1", th, r, next)
			}
			next = r.ToSeq + 1
		}
		if fmt.Sprint(kept) != fmt.Sprint(events[th]) {
			t.Errorf("%s events = %v; want %v", th, kept, events[th])
		}
		if next == 1 {
			t.Fatalf("%s: nothing dropped from %d samples on a %d-byte disk", th, appended[th], diskSize)
		}
		recs, err := o.Telemetry(ctx, th, 1, 0, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 || recs[0].Seq != next || recs[len(recs)-1].Seq != uint64(appended[th]) || len(recs) != appended[th]-int(next-1) {
			t.Fatalf("%s telemetry left: %d records from %d; want exactly seqs %d..%d", th, len(recs), recs[0].Seq, next, appended[th])
		}
		droppedTotal += int64(next - 1)
	}
	if s.Telemetry.Dropped != droppedTotal {
		t.Errorf("Stats().Telemetry.Dropped = %d; want %d, the sum of the reports", s.Telemetry.Dropped, droppedTotal)
	}
	t.Logf("budget %+v; telemetry %d records, %d dropped", s.Budget, s.Telemetry.Records, s.Telemetry.Dropped)
}
