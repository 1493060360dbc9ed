package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/testkit"

	"github.com/bowline-iot/bowline/edge/wire"
)

func testLogger(t testing.TB) *slog.Logger { return testkit.Logger(t, slog.LevelInfo) }

func openTest(t *testing.T, cfg Config) *Outbox {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "outbox.db")
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	o, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open(%s): %v", cfg.Path, err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

var t0 = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

func samples(thing string, n int, start time.Time) []Entry {
	out := make([]Entry, n)
	for i := range out {
		out[i] = Entry{Lane: Telemetry, Thing: thing, At: start.Add(time.Duration(i) * 20 * time.Millisecond), Type: "weight_g", Value: float64(i)}
	}
	return out
}

var unlimited = BatchLimit{MaxSamples: 1 << 30}

func TestAppendAssignsPerThingPerLaneSeq(t *testing.T) {
	ctx := context.Background()
	o := openTest(t, Config{})
	entries := append(samples("bowl-a", 3, t0), samples("bowl-b", 2, t0)...)
	entries = append(entries, Entry{Lane: Events, Thing: "bowl-a", At: t0, Type: "bowl.empty", ID: "e1", Data: []byte(`{}`)})
	if err := o.Append(ctx, entries, map[string][]byte{"k": []byte("v")}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if err := o.Append(ctx, samples("bowl-a", 1, t0), nil); err != nil {
		t.Fatalf("Append: %v", err)
	}
	bt, ok, err := o.TelemetryBatch(ctx, "bowl-a", 0, unlimited)
	if err != nil || !ok {
		t.Fatalf("TelemetryBatch: %v %v", ok, err)
	}
	if bt.First != 1 || bt.Last != 4 || len(bt.Samples) != 4 {
		t.Fatalf("batch = %d..%d (%d samples); want 1..4 (4)", bt.First, bt.Last, len(bt.Samples))
	}
	ev, err := o.Events(ctx, "bowl-a", 0, 10)
	if err != nil || len(ev) != 1 || ev[0].Seq != 1 || ev[0].ID != "e1" {
		t.Fatalf("Events = %+v, %v; want one event seq 1 id e1", ev, err)
	}
	if v, _ := o.State("k"); string(v) != "v" {
		t.Fatalf("State(k) = %q; want v", v)
	}
}

func TestSealedBatchIsStableAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outbox.db")
	o := openTest(t, Config{Path: path})
	if err := o.Append(ctx, samples("bowl-a", 10, t0), nil); err != nil {
		t.Fatal(err)
	}
	lim := BatchLimit{MaxSamples: 4}
	bt, _, err := o.TelemetryBatch(ctx, "bowl-a", 0, lim)
	if err != nil || bt.First != 1 || bt.Last != 4 {
		t.Fatalf("first batch = %d..%d, %v; want 1..4", bt.First, bt.Last, err)
	}
	o.Close()
	o = openTest(t, Config{Path: path})
	// More samples and a larger limit: the sealed batch must not grow.
	if err := o.Append(ctx, samples("bowl-a", 5, t0), nil); err != nil {
		t.Fatal(err)
	}
	again, _, err := o.TelemetryBatch(ctx, "bowl-a", 0, unlimited)
	if err != nil || again.First != 1 || again.Last != 4 {
		t.Fatalf("batch after reopen = %d..%d, %v; want 1..4", again.First, again.Last, err)
	}
	next, _, _ := o.TelemetryBatch(ctx, "bowl-a", again.Last+1, unlimited)
	if next.First != 5 || next.Last != 15 {
		t.Fatalf("next batch = %d..%d; want 5..15", next.First, next.Last)
	}
	if err := o.Ack(ctx, Telemetry, "bowl-a", again.First, again.Last); err != nil {
		t.Fatal(err)
	}
	after, _, _ := o.TelemetryBatch(ctx, "bowl-a", 0, unlimited)
	if after.First != 5 || after.Last != 15 {
		t.Fatalf("after ack = %d..%d; want 5..15", after.First, after.Last)
	}
	s, _ := o.Stats()
	if s.Telemetry.Records != 11 {
		t.Fatalf("telemetry records = %d; want 11", s.Telemetry.Records)
	}
}

func TestConcurrentAppendsAreGroupCommitted(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	commits, entries := 0, 0
	o := openTest(t, Config{Observer: commitFunc(func(ops, n int, _ time.Duration) { mu.Lock(); commits++; entries += n; mu.Unlock() })})
	const writers, each = 16, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := o.Append(ctx, samples(fmt.Sprintf("bowl-%d", w%4), 1, t0), nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if entries != writers*each {
		t.Fatalf("committed entries = %d; want %d", entries, writers*each)
	}
	if commits >= writers*each {
		t.Fatalf("commits = %d for %d appends; want fewer (group commit)", commits, writers*each)
	}
	t.Logf("%d appends in %d commits", writers*each, commits)
}

func TestDiskCapDropsOldestTelemetryAndReportsRange(t *testing.T) {
	ctx := context.Background()
	// Each sample costs 8+19+8+16 = 51 bytes ("weight_g" is 8 bytes).
	cost := recordCost(len(encodeValue(samples("b", 1, t0)[0])))
	o := openTest(t, Config{MaxBytes: 100 * cost, EventReserve: 20 * cost})
	for i := range 10 {
		if err := o.Append(ctx, samples("bowl-a", 10, t0.Add(time.Duration(i)*time.Second)), nil); err != nil {
			t.Fatal(err)
		}
	}
	// 100 samples > 80 allowed: the 20 oldest go, one report.
	s, _ := o.Stats()
	if s.Telemetry.Records != 80 || s.Telemetry.Dropped != 20 {
		t.Fatalf("telemetry records %d dropped %d; want 80 and 20", s.Telemetry.Records, s.Telemetry.Dropped)
	}
	ev, _ := o.Events(ctx, "bowl-a", 0, 10)
	var dropped []wire.TelemetryDropped
	for _, e := range ev {
		if e.Type != DroppedType {
			t.Fatalf("event type %q; want %q", e.Type, DroppedType)
		}
		var r wire.TelemetryDropped
		if err := json.Unmarshal(e.Data, &r); err != nil {
			t.Fatal(err)
		}
		dropped = append(dropped, r)
	}
	total := 0
	for _, r := range dropped {
		total += int(r.Count)
		if r.Reason != ReasonDiskCap || r.ToSeq-r.FromSeq+1 != r.Count {
			t.Fatalf("report %+v: want reason disk_cap and count = to-from+1", r)
		}
	}
	if total != 20 || dropped[0].FromSeq != 1 || dropped[len(dropped)-1].ToSeq != 20 {
		t.Fatalf("reports %+v; want seqs 1..20 in total", dropped)
	}
	bt, _, _ := o.TelemetryBatch(ctx, "bowl-a", 0, unlimited)
	if bt.First != 21 || bt.Last != 100 {
		t.Fatalf("remaining = %d..%d; want 21..100", bt.First, bt.Last)
	}
}

func TestDiskCapNeverDropsEvents(t *testing.T) {
	ctx := context.Background()
	o := openTest(t, Config{MaxBytes: 2000, EventReserve: 500})
	ev := func(i int) Entry {
		return Entry{Lane: Events, Thing: "bowl-a", At: t0, Type: "bowl.refilled", ID: fmt.Sprint("r", i), Data: []byte(`{"grams_added":100}`)}
	}
	var err error
	n := 0
	for ; n < 1000; n++ {
		if err = o.Append(ctx, []Entry{ev(n)}, nil); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrFull) {
		t.Fatalf("Append past the cap: %v; want ErrFull", err)
	}
	got, _ := o.Events(ctx, "bowl-a", 0, 10000)
	if len(got) != n {
		t.Fatalf("stored events = %d; want all %d accepted", len(got), n)
	}
}

func TestSealedBatchDroppedWhole(t *testing.T) {
	ctx := context.Background()
	cost := recordCost(len(encodeValue(samples("b", 1, t0)[0])))
	o := openTest(t, Config{MaxBytes: 30 * cost, EventReserve: 10 * cost})
	if err := o.Append(ctx, samples("bowl-a", 10, t0), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.TelemetryBatch(ctx, "bowl-a", 0, BatchLimit{MaxSamples: 8}); err != nil {
		t.Fatal(err)
	}
	// 10 more: 20 fits exactly; one more forces a drop of the sealed 1..8.
	if err := o.Append(ctx, samples("bowl-a", 11, t0.Add(time.Minute)), nil); err != nil {
		t.Fatal(err)
	}
	ev, _ := o.Events(ctx, "bowl-a", 0, 10)
	var r wire.TelemetryDropped
	if len(ev) != 1 || json.Unmarshal(ev[0].Data, &r) != nil || r.FromSeq != 1 || r.ToSeq != 8 || r.Count != 8 {
		t.Fatalf("drop events %+v (%+v); want one report of 1..8", ev, r)
	}
}

func TestTTLExpiresTelemetry(t *testing.T) {
	ctx := context.Background()
	now := t0
	o := openTest(t, Config{TelemetryTTL: 30 * time.Minute, Now: func() time.Time { return now }})
	if err := o.Append(ctx, samples("bowl-a", 5, t0), nil); err != nil {
		t.Fatal(err)
	}
	now = t0.Add(time.Hour) // the first five waited an hour
	if err := o.Append(ctx, samples("bowl-a", 5, now), nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	ev, _ := o.Events(ctx, "bowl-a", 0, 10)
	var r wire.TelemetryDropped
	if len(ev) != 1 || json.Unmarshal(ev[0].Data, &r) != nil || r.FromSeq != 1 || r.ToSeq != 5 || r.Reason != ReasonTTL {
		t.Fatalf("ttl drop = %+v; want 1..5 reason ttl", r)
	}
}

func TestOpenRefusesCorruptFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outbox.db")
	o := openTest(t, Config{Path: path})
	if err := o.Append(ctx, samples("bowl-a", 2000, t0), nil); err != nil {
		t.Fatal(err)
	}
	o.Close()
	// Tear a page in the middle of the file, as a lost write would.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = 0xA5
	}
	for off := int64(4 * 4096); off < fi.Size(); off += 4096 {
		if _, err := f.WriteAt(garbage, off); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	_, err = Open(Config{Path: path, Logger: testLogger(t)})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open(torn file) error = %v; want ErrCorrupt", err)
	}
	s, err := Recover(path, testLogger(t))
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if _, err := os.Stat(s.MovedTo); err != nil {
		t.Fatalf("damaged file not kept at %s: %v", s.MovedTo, err)
	}
	o2 := openTest(t, Config{Path: path})
	if err := o2.Append(ctx, samples("bowl-a", 1, t0), nil); err != nil {
		t.Fatalf("Append after recover: %v", err)
	}
}

func TestOpenRefusesGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	if err := os.WriteFile(path, []byte("not a bbolt file at all, just text that is long enough"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Config{Path: path, Logger: testLogger(t)})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open(garbage) error = %v; want ErrCorrupt", err)
	}
}

func TestOpenRefusesSecondProcessLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	openTest(t, Config{Path: path})
	_, err := Open(Config{Path: path, Logger: testLogger(t)})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open error = %v; want ErrLocked", err)
	}
}

func TestCompactShrinksSparseFile(t *testing.T) {
	ctx := context.Background()
	o := openTest(t, Config{CompactMinBytes: 1})
	for range 20 {
		if err := o.Append(ctx, samples("bowl-a", 5000, t0), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Ack(ctx, Telemetry, "bowl-a", 1, 99000); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(o.Path())
	done, err := o.Compact()
	if err != nil || !done {
		t.Fatalf("Compact = %v, %v; want true", done, err)
	}
	after, _ := os.Stat(o.Path())
	if after.Size() >= before.Size() {
		t.Fatalf("size after compact = %d; want < %d", after.Size(), before.Size())
	}
	bt, _, _ := o.TelemetryBatch(ctx, "bowl-a", 0, unlimited)
	if bt.First != 99001 || bt.Last != 100000 {
		t.Fatalf("after compact = %d..%d; want 99001..100000", bt.First, bt.Last)
	}
	if err := o.Append(ctx, samples("bowl-a", 1, t0), nil); err != nil {
		t.Fatalf("Append after compact: %v", err)
	}
}

func TestConfigValidateNamesField(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "path"},
		{Config{Path: "x", MaxBytes: 10, EventReserve: 10}, "event_reserve"},
		{Config{Path: "x", CompactFreeRatio: 2}, "compact_free_ratio"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Fatalf("Validate(%+v) = %v; want an error naming %s", tt.cfg, err, tt.want)
		}
	}
}

// commitFunc observes the outbox's commits only.
type commitFunc func(ops, entries int, took time.Duration)

func (f commitFunc) Committed(ops, entries int, took time.Duration) { f(ops, entries, took) }
func (commitFunc) Dropped(Lane, string, int, string)                {}
