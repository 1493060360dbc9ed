package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/testkit"

	"github.com/bowline-iot/bowline/edge/wire"
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

// feeder appends telemetry of several things, with an event now and then,
// and remembers what it appended.
type feeder struct {
	o        *Outbox
	things   []string
	appended map[string]int
	events   map[string][]string
	n        int
}

func newFeeder(o *Outbox, things ...string) *feeder {
	return &feeder{o: o, things: things, appended: map[string]int{}, events: map[string][]string{}}
}

// feed makes rounds appends of perAppend samples per thing; every 20th
// append carries an event too. Every append must succeed.
func (f *feeder) feed(t *testing.T, rounds, perAppend int) {
	t.Helper()
	for range rounds {
		for _, th := range f.things {
			start := t0.Add(time.Duration(f.appended[th]) * 20 * time.Millisecond)
			batch := samples(th, perAppend, start)
			if f.n%20 == 0 {
				id := fmt.Sprintf("refill-%d", f.n)
				batch = append(batch, Entry{Lane: Events, Thing: th, At: start, Type: "bowl.refilled", ID: id, Data: []byte(`{"grams_added":120}`)})
				f.events[th] = append(f.events[th], id)
			}
			if err := f.o.Append(context.Background(), batch, nil); err != nil {
				t.Fatalf("Append %d of %s on a full disk: %v; want the oldest telemetry dropped", f.n, th, err)
			}
			f.appended[th] += perAppend
		}
		f.n++
	}
}

// check verifies the accounting: per thing, the drop reports name seqs
// 1..D without a gap, the telemetry left is exactly D+1..appended, every
// event is there, and the dropped counter is the sum of the reports.
func (f *feeder) check(t *testing.T, reason string) Stats {
	t.Helper()
	ctx := context.Background()
	s, err := f.o.Stats()
	if err != nil {
		t.Fatal(err)
	}
	var droppedTotal int64
	for _, th := range f.things {
		evs, err := f.o.Events(ctx, th, 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		next := uint64(1) // the first seq not reported dropped
		for _, e := range evs {
			if e.Type != DroppedType {
				kept = append(kept, e.ID)
				continue
			}
			var r wire.TelemetryDropped
			if err := json.Unmarshal(e.Data, &r); err != nil {
				t.Fatal(err)
			}
			if r.Reason != reason || r.FromSeq != next || r.ToSeq-r.FromSeq+1 != r.Count {
				t.Fatalf("%s drop report %+v; want %s from seq %d, count = to-from+1", th, r, reason, next)
			}
			next = r.ToSeq + 1
		}
		if fmt.Sprint(kept) != fmt.Sprint(f.events[th]) {
			t.Errorf("%s events = %v; want %v", th, kept, f.events[th])
		}
		if next == 1 {
			t.Fatalf("%s: nothing dropped from %d samples", th, f.appended[th])
		}
		recs, err := f.o.Telemetry(ctx, th, 1, 0, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 || recs[0].Seq != next || recs[len(recs)-1].Seq != uint64(f.appended[th]) || len(recs) != f.appended[th]-int(next-1) {
			t.Fatalf("%s telemetry left: %d records; want exactly seqs %d..%d", th, len(recs), next, f.appended[th])
		}
		droppedTotal += int64(next - 1)
	}
	if s.Telemetry.Dropped != droppedTotal {
		t.Errorf("Stats().Telemetry.Dropped = %d; want %d, the sum of the reports", s.Telemetry.Dropped, droppedTotal)
	}
	t.Logf("budget %+v; telemetry %d records, %d dropped", s.Budget, s.Telemetry.Records, s.Telemetry.Dropped)
	return s
}

// TestFullDiskDropsOldestTelemetryAndKeepsEvents fills a 4 MiB file system
// with an outbox whose logical cap (64 MiB) it could never hold. Every
// append must succeed: the disk budget lowers the cap, the oldest telemetry
// goes, bowl.telemetry_dropped reports name exactly the seqs that went,
// what is left is exactly the rest, and no event is lost.
func TestFullDiskDropsOldestTelemetryAndKeepsEvents(t *testing.T) {
	const diskSize = 4 << 20
	dir := smallDisk(t, diskSize)
	o := openTest(t, Config{Path: filepath.Join(dir, "outbox.db"), MaxBytes: 64 << 20, TelemetryTTL: -1})
	f := newFeeder(o, "bowl-a", "bowl-b")
	// 240,000 samples of about 51 bytes: 12 MiB of records, three times
	// the disk.
	f.feed(t, 240, 500)
	s := f.check(t, ReasonDiskCap)
	if !s.Budget.DiskLimited || s.Budget.EffectiveMaxBytes >= s.MaxBytes || s.Budget.FSFreeBytes < 0 || s.Budget.FSFreeBytes > diskSize {
		t.Errorf("Stats().Budget = %+v; want disk limited, effective cap under %d, file system free in [0, %d]", s.Budget, s.MaxBytes, diskSize)
	}
}

// TestDiskFilledByOthersDropsOldestTelemetry lets another file take every
// free byte of the file system under a running outbox: the budget has no
// headroom left, a commit fails with ENOSPC, and the outbox must make room
// by dropping its oldest telemetry (reported) and keep taking appends.
func TestDiskFilledByOthersDropsOldestTelemetry(t *testing.T) {
	for _, headroom := range []int64{0, 256 << 10} { // 0: the default
		t.Run(fmt.Sprint("headroom=", headroom), func(t *testing.T) { testDiskFilledByOthers(t, headroom) })
	}
}

func testDiskFilledByOthers(t *testing.T, headroom int64) {
	dir := smallDisk(t, 4<<20)
	o := openTest(t, Config{Path: filepath.Join(dir, "outbox.db"), MaxBytes: 64 << 20, TelemetryTTL: -1, DiskHeadroom: headroom})
	f := newFeeder(o, "bowl-a", "bowl-b")
	f.feed(t, 20, 500) // about 1 MiB of records
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer filler.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break // ENOSPC: the disk is full
		}
	}
	_ = filler.Sync()
	f.feed(t, 40, 500)
	if headroom > 0 {
		// One append of about 200 KiB, near the whole headroom: its commit
		// runs out of disk and must be retried after a squeeze.
		f.feed(t, 1, 4000)
		f.feed(t, 10, 500)
	}
	f.check(t, ReasonDiskCap)
}

// squeezeCounter counts the outbox's "no space left" squeezes: the log
// line of the ENOSPC retry path (Outbox.squeeze).
type squeezeCounter struct {
	slog.Handler
	n *atomic.Int64
}

func (h squeezeCounter) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "no space left on the disk: dropped") {
		h.n.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

func (h squeezeCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return squeezeCounter{h.Handler.WithAttrs(as), h.n}
}

func (h squeezeCounter) WithGroup(name string) slog.Handler {
	return squeezeCounter{h.Handler.WithGroup(name), h.n}
}

// TestCommitOutOfSpaceDropsOldestTelemetryAndRetries plays a file system
// that overstates its free space (statfs says a terabyte is free on a
// 4 MiB tmpfs), so the budget never lowers the cap and commits run into
// ENOSPC: the path the budget cannot foresee. Each such commit must be
// retried after a squeeze (the oldest telemetry dropped and reported in a
// transaction of its own), so every Append still succeeds, which is what
// lets the bridge keep acknowledging the MCU; the drop reports account
// exactly for the seqs that went, and no event is lost. Before the ballast
// the squeeze itself met ENOSPC (it writes pages too) and the append
// failed.
func TestCommitOutOfSpaceDropsOldestTelemetryAndRetries(t *testing.T) {
	dir := smallDisk(t, 4<<20)
	orig := freeSpace
	freeSpace = func(string) int64 { return 1 << 40 }
	t.Cleanup(func() { freeSpace = orig })
	var squeezes atomic.Int64
	log := slog.New(squeezeCounter{testLogger(t).Handler(), &squeezes})
	o := openTest(t, Config{Path: filepath.Join(dir, "outbox.db"), MaxBytes: 64 << 20, TelemetryTTL: -1, Logger: log})
	f := newFeeder(o, "bowl-a", "bowl-b")
	f.feed(t, 240, 500) // 12 MiB of records on a 4 MiB disk
	s := f.check(t, ReasonDiskCap)
	if squeezes.Load() == 0 {
		t.Fatalf("no commit met ENOSPC (budget %+v); the test did not reach the retry path", s.Budget)
	}
	// After ENOSPC the file system's word is not taken: the cap keeps the
	// file within what it holds, so later commits need no squeeze.
	if !s.Budget.OutOfSpace || !s.Budget.DiskLimited || s.Budget.BallastBytes != 0 {
		t.Errorf("Stats().Budget = %+v; want out of space, disk limited, no ballast (nowhere to put it)", s.Budget)
	}
	t.Logf("%d commits met ENOSPC and were retried after a squeeze", squeezes.Load())
}
