package outbox

// Power-cut tests: the outbox runs in a child process (this test binary in
// helper mode) on an internal/powercut mount; the parent cuts the power,
// SIGKILLs the child, boots the mount with only synced state and checks
// that every entry the child acknowledged (printed "ack <id>" after Append
// returned) is still there. docs/power-cut.md explains the harness.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/bowline-iot/bowline/internal/powercut"
	"github.com/bowline-iot/bowline/internal/testkit"
)

const (
	pcHelperEnv = "BOWLINE_OUTBOX_POWERCUT_HELPER" // the outbox path
	pcThing     = "bowl-pc"
	pcWriters   = 4
)

// TestPowerCutHelper is the child process, not a test: it opens the outbox
// (recovering it first when BOWLINE_OUTBOX_POWERCUT_RECOVER=1, or when
// Open reports it corrupt), prints "have <id>" for every stored event and
// "ready", then, with BOWLINE_OUTBOX_POWERCUT_WRITE=<prefix>, appends
// events from several goroutines and prints "ack <id>" after each Append
// returns, until it is killed.
func TestPowerCutHelper(t *testing.T) {
	path := os.Getenv(pcHelperEnv)
	if path == "" {
		t.Skip("helper process for the power-cut tests")
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		_ = out.Flush()
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if os.Getenv("BOWLINE_OUTBOX_POWERCUT_RECOVER") == "1" {
		s, err := Recover(path, logger)
		if err != nil {
			say("fatal recover: %v", err)
			os.Exit(2)
		}
		say("recovered copied=%d lost=%d", s.Copied, len(s.Lost))
	}
	cfg := Config{Path: path, NoSync: os.Getenv("BOWLINE_OUTBOX_POWERCUT_NOSYNC") == "1", Logger: logger}
	o, err := Open(cfg)
	if errors.Is(err, ErrCorrupt) {
		say("corrupt: %v", err)
		if _, err := Recover(path, logger); err != nil {
			say("fatal recover: %v", err)
			os.Exit(2)
		}
		o, err = Open(cfg)
	}
	if err != nil {
		say("fatal open: %v", err)
		os.Exit(2)
	}
	ctx := context.Background()
	for from := uint64(0); ; {
		recs, err := o.Events(ctx, pcThing, from, 1000)
		if err != nil {
			say("fatal read: %v", err)
			os.Exit(2)
		}
		if len(recs) == 0 {
			break
		}
		for _, r := range recs {
			say("have %s", r.ID)
		}
		from = recs[len(recs)-1].Seq + 1
	}
	say("ready")
	prefix := os.Getenv("BOWLINE_OUTBOX_POWERCUT_WRITE")
	if prefix == "" {
		_ = o.Close()
		os.Exit(0)
	}
	for w := range pcWriters {
		go func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("%s-w%d-%d", prefix, w, i)
				e := Entry{Lane: Events, Thing: pcThing, At: time.Now(), Type: "bowl.test", ID: id, Data: []byte(`{"pad":"` + strings.Repeat("x", 200) + `"}`)}
				if err := o.Append(ctx, []Entry{e}, nil); err != nil {
					say("err %v", err)
					return
				}
				say("ack %s", id)
			}
		}()
	}
	select {}
}

// pcChild is a running helper.
type pcChild struct {
	child *testkit.Child
	lines <-chan string
	acked map[string]bool
	have  map[string]bool
	info  []string
}

func startHelper(t *testing.T, path string, env ...string) *pcChild {
	t.Helper()
	cmd := testkit.TestBinary("-test.run=^TestPowerCutHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{pcHelperEnv + "=" + path}, env...)...)
	cmd.Stderr = testWriter{t}
	child := testkit.StartChildLines(t, "helper", cmd)
	return &pcChild{child: child, lines: child.Lines(), acked: map[string]bool{}, have: map[string]bool{}}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("helper: %s", strings.TrimSpace(string(p)))
	return len(p), nil
}

// readUntil consumes lines until stop returns true or the output ends; it
// fails the test on a fatal line.
func (c *pcChild) readUntil(t *testing.T, what string, stop func() bool) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for !stop() {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return
			}
			c.take(t, line)
		case <-timeout:
			t.Fatalf("helper: no %s within 60s", what)
		}
	}
}

func (c *pcChild) take(t *testing.T, line string) {
	t.Helper()
	switch kind, rest, _ := strings.Cut(line, " "); kind {
	case "ack":
		c.acked[rest] = true
	case "have":
		c.have[rest] = true
	case "fatal":
		t.Fatalf("helper: %s", line)
	default:
		c.info = append(c.info, line)
	}
}

// kill SIGKILLs the child and collects every line it printed first: an
// ack already written to the pipe reached the "MCU".
func (c *pcChild) kill(t *testing.T) {
	c.child.Kill()
	_ = c.child.Wait(testkit.Context(t))
	for line := range c.lines {
		c.take(t, line)
	}
}

func (c *pcChild) wait(t *testing.T) {
	c.readUntil(t, "exit", func() bool { return false })
	if err := c.child.Wait(testkit.Context(t)); err != nil {
		t.Fatalf("helper: %v (%s)", err, strings.Join(c.info, "; "))
	}
}

func pcDisk(t *testing.T) *powercut.Disk { return pcDiskMode(t, false) }

// pcDiskMode mounts a disk; strict: namespace changes need a directory
// fsync (POSIX), not just any fsync (ext4).
func pcDiskMode(t *testing.T, strict bool) *powercut.Disk {
	t.Helper()
	testkit.Need(t, powercut.Available())
	dir := t.TempDir()
	d, err := powercut.Mount(powercut.Options{Mountpoint: filepath.Join(dir, "mnt"), Backing: filepath.Join(dir, "disk"), Strict: strict, Logger: testkit.Logger(t, slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// cutResult is one row of the table in docs/power-cut.md.
type cutResult struct {
	cuts, torn, acked, lost int
	recovered               int // boots whose Open reported ErrCorrupt
	lostIDs                 []string
}

// runCuts writes through n power cuts, each after a random number of acks
// (fixed seed), and checks after every boot what survived. With tear, every
// other cut instead falls inside one of the next few fsyncs of the outbox
// file, letting a random prefix of its dirty pages reach the disk: a torn
// data page write or a torn meta page write, wherever the commit was.
func runCuts(t *testing.T, d *powercut.Disk, n int, tear bool, env ...string) cutResult {
	t.Helper()
	path := filepath.Join(d.Dir(), "outbox.db")
	rng := rand.New(rand.NewPCG(15, 15))
	tearRng := rand.New(rand.NewPCG(16, 16)) // used under the disk's lock
	acked := map[string]bool{}
	var res cutResult
	check := func(have map[string]bool) {
		for id := range acked {
			if !have[id] {
				res.lost++
				res.lostIDs = append(res.lostIDs, id)
				delete(acked, id) // count each loss once
			}
		}
	}
	for i := range n {
		c := startHelper(t, path, append(env, "BOWLINE_OUTBOX_POWERCUT_WRITE=b"+strconv.Itoa(i))...)
		c.readUntil(t, "ready", func() bool { return slices.Contains(c.info, "ready") })
		check(c.have)
		res.recovered += pcCorrupt(c.info)
		target := 1 + rng.IntN(60)
		c.readUntil(t, fmt.Sprintf("%d acks", target), func() bool { return len(c.acked) >= target })
		if tear && i%2 == 1 {
			skip := rng.IntN(6)
			d.TearNextSync(func(p string, pending []powercut.Extent) (int64, bool) {
				if p != "outbox.db" {
					return 0, false
				}
				if skip > 0 {
					skip--
					return 0, false
				}
				var total int64
				for _, e := range pending {
					total += e.Len
				}
				return tearRng.Int64N(total + 1), true
			})
			testkit.WaitFor(t, "a torn sync", 30*time.Second, d.Dead)
			res.torn++
		}
		if err := d.Cut(context.Background(), func() { c.kill(t) }); err != nil {
			t.Fatal(err)
		}
		for id := range c.acked {
			acked[id] = true
		}
		res.acked += len(c.acked)
		res.cuts++
		if err := d.Boot(); err != nil {
			t.Fatal(err)
		}
	}
	c := startHelper(t, path, env...)
	c.wait(t)
	check(c.have)
	res.recovered += pcCorrupt(c.info)
	return res
}

func pcCorrupt(info []string) int {
	n := 0
	for _, l := range info {
		if strings.HasPrefix(l, "corrupt") {
			n++
		}
	}
	return n
}

// pcCuts is the number of cuts: 20, or BOWLINE_POWERCUT_CUTS (the bench).
func pcCuts(t *testing.T, def int) int {
	if v := os.Getenv("BOWLINE_POWERCUT_CUTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("BOWLINE_POWERCUT_CUTS=%q: want a positive integer", v)
		}
		return n
	}
	return def
}

// TestPowerCutKeepsAcknowledged: with fsync (the default), no event the
// outbox acknowledged is lost at any of the cuts, half of which tear an
// fsync, and no boot needs --recover.
func TestPowerCutKeepsAcknowledged(t *testing.T) {
	d := pcDisk(t)
	res := runCuts(t, d, pcCuts(t, 20), true)
	st := d.Stats()
	t.Logf("| outbox (fsync) | %d | %d | %d | %d cuts inside an fsync (torn), %d KiB of unsynced pages discarded, %d opens needed --recover |",
		res.cuts, res.acked, res.lost, st.Torn, st.Discarded>>10, res.recovered)
	if res.acked == 0 {
		t.Fatal("no event was acknowledged")
	}
	if res.lost > 0 {
		t.Fatalf("%d of %d acknowledged events lost after %d cuts, e.g. %v", res.lost, res.acked, res.cuts, res.lostIDs[:min(5, len(res.lostIDs))])
	}
	if st.Torn != res.torn || res.recovered > 0 {
		t.Fatalf("torn syncs = %d, want %d; opens that found the file corrupt = %d, want 0", st.Torn, res.torn, res.recovered)
	}
}

// TestPowerCutLosesWithoutSync is the control: with NoSync the harness must
// throw acknowledged events away, or it is not cutting anything.
func TestPowerCutLosesWithoutSync(t *testing.T) {
	d := pcDisk(t)
	res := runCuts(t, d, pcCuts(t, 3), false, "BOWLINE_OUTBOX_POWERCUT_NOSYNC=1")
	st := d.Stats()
	t.Logf("| outbox (NoSync, the control) | %d | %d | %d | %d KiB of unsynced pages discarded |", res.cuts, res.acked, res.lost, st.Discarded>>10)
	if res.lost == 0 {
		t.Fatalf("NoSync outbox lost none of %d acknowledged events over %d cuts; the harness is not discarding unsynced writes", res.acked, res.cuts)
	}
}

// TestPowerCutTornMetaPage tears bbolt's meta page write: the cut falls in
// the second fdatasync of a commit, after the first 72 bytes of the new
// meta page (new root, freelist, high-water mark and txid, but not the new
// checksum) reached the disk. bbolt must fall back to the other meta page,
// and Recover (bowline-edge run --recover) must keep every acknowledged
// event.
func TestPowerCutTornMetaPage(t *testing.T) {
	d := pcDisk(t)
	path := filepath.Join(d.Dir(), "outbox.db")
	c := startHelper(t, path, "BOWLINE_OUTBOX_POWERCUT_WRITE=torn")
	c.readUntil(t, "50 acks", func() bool { return len(c.acked) >= 50 })
	pageSize := int64(os.Getpagesize())
	d.TearNextSync(func(p string, pending []powercut.Extent) (int64, bool) {
		meta := len(pending) == 1 && pending[0].Len == pageSize && (pending[0].Off == 0 || pending[0].Off == pageSize)
		return 72, p == "outbox.db" && meta
	})
	testkit.WaitFor(t, "a torn meta page write", 30*time.Second, d.Dead)
	if err := d.Cut(context.Background(), func() { c.kill(t) }); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.Torn != 1 {
		t.Fatalf("torn syncs = %d; want 1", st.Torn)
	}
	if err := d.Boot(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path) // a plain read: this process serves the mount
	if err != nil {
		t.Fatal(err)
	}
	if valid := metaValid(raw, int(pageSize)); valid[0] == valid[1] {
		t.Fatalf("meta pages valid = %v; want exactly one torn", valid)
	}
	// Recover on the file exactly as the cut left it, then a plain Open.
	for _, env := range []string{"BOWLINE_OUTBOX_POWERCUT_RECOVER=1", "BOWLINE_OUTBOX_POWERCUT_RECOVER=0"} {
		v := startHelper(t, path, env)
		v.wait(t)
		var lost []string
		for id := range c.acked {
			if !v.have[id] {
				lost = append(lost, id)
			}
		}
		t.Logf("%s: %v; %d acknowledged, %d stored", env, v.info, len(c.acked), len(v.have))
		if len(lost) > 0 {
			t.Fatalf("%s: %d of %d acknowledged events lost after a torn meta page, e.g. %v", env, len(lost), len(c.acked), lost[:min(5, len(lost))])
		}
	}
}

// metaValid checks bbolt's two meta pages the way bbolt does: the page
// header is 16 bytes, the meta 64 bytes, and its last 8 bytes are the
// FNV-1a 64 checksum of the 56 before them.
func metaValid(file []byte, pageSize int) [2]bool {
	var out [2]bool
	for i := range out {
		m := file[i*pageSize+16:][:64]
		h := fnv.New64a()
		h.Write(m[:56])
		out[i] = binary.LittleEndian.Uint64(m[56:]) == h.Sum64()
	}
	return out
}

// metaTxid is the txid field of meta page i.
func metaTxid(file []byte, pageSize, i int) uint64 {
	return binary.LittleEndian.Uint64(file[i*pageSize+16+48:])
}

// TestRecoverKeepsRecordsBeforeCorruptMeta corrupts the newest meta page of
// a closed outbox (what a torn meta write on a disk without sector
// atomicity, or a bad sector, leaves): Recover must succeed and keep every
// event committed up to the transaction before it.
func TestRecoverKeepsRecordsBeforeCorruptMeta(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	o := openTest(t, Config{Path: path})
	ctx := context.Background()
	committedAt := map[string]uint64{} // event id -> txid that committed it
	for i := range 20 {
		id := fmt.Sprintf("e%d", i)
		if err := o.Append(ctx, []Entry{{Lane: Events, Thing: pcThing, At: t0, Type: "bowl.test", ID: id}}, nil); err != nil {
			t.Fatal(err)
		}
		_ = o.db.View(func(tx *bolt.Tx) error { committedAt[id] = uint64(tx.ID()); return nil })
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := os.Getpagesize()
	last := 0
	if metaTxid(raw, ps, 1) > metaTxid(raw, ps, 0) {
		last = 1
	}
	lastTxid := metaTxid(raw, ps, last)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("torn-meta"), int64(last*ps+16+56)); err != nil { // the checksum
		t.Fatal(err)
	}
	_ = f.Close()

	s, err := Recover(path, testLogger(t))
	if err != nil {
		t.Fatalf("Recover(%s): %v", path, err)
	}
	o2 := openTest(t, Config{Path: path})
	recs, err := o2.Events(ctx, pcThing, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range recs {
		have[r.ID] = true
	}
	for id, txid := range committedAt {
		if txid < lastTxid && !have[id] {
			t.Errorf("event %s committed in txid %d (before the corrupt txid %d) lost by Recover (%+v)", id, txid, lastTxid, s)
		}
	}
	t.Logf("corrupt meta txid %d: %d of %d events kept, salvage %+v", lastTxid, len(have), len(committedAt), s)
}

// TestPowerCutStrictDirectorySync runs the cuts on a disk where only a
// directory fsync makes a new file's name durable (POSIX; ext4 is more
// forgiving). bbolt never fsyncs the directory, so Open must, or the whole
// outbox file disappears at the first cut.
func TestPowerCutStrictDirectorySync(t *testing.T) {
	d := pcDiskMode(t, true)
	res := runCuts(t, d, pcCuts(t, 6), true)
	t.Logf("| outbox (fsync, strict directory sync) | %d | %d | %d | |", res.cuts, res.acked, res.lost)
	if res.lost > 0 {
		t.Fatalf("%d of %d acknowledged events lost after %d cuts on a strict disk, e.g. %v", res.lost, res.acked, res.cuts, res.lostIDs[:min(5, len(res.lostIDs))])
	}
}

// TestPowerCutAfterRecoverStrict: Recover moves the file aside and creates
// a new one; both are directory entries. On a strict disk the events
// appended after the recovery must survive the next cut.
func TestPowerCutAfterRecoverStrict(t *testing.T) {
	d := pcDiskMode(t, true)
	path := filepath.Join(d.Dir(), "outbox.db")
	acked := map[string]bool{}
	for i, env := range []string{"BOWLINE_OUTBOX_POWERCUT_RECOVER=0", "BOWLINE_OUTBOX_POWERCUT_RECOVER=1"} {
		c := startHelper(t, path, env, "BOWLINE_OUTBOX_POWERCUT_WRITE=r"+strconv.Itoa(i))
		c.readUntil(t, "20 acks", func() bool { return len(c.acked) >= 20 })
		if err := d.Cut(context.Background(), func() { c.kill(t) }); err != nil {
			t.Fatal(err)
		}
		for id := range c.acked {
			acked[id] = true
		}
		if err := d.Boot(); err != nil {
			t.Fatal(err)
		}
	}
	v := startHelper(t, path)
	v.wait(t)
	var lost []string
	for id := range acked {
		if !v.have[id] {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		t.Fatalf("%d of %d acknowledged events lost across a recovery and a cut, e.g. %v", len(lost), len(acked), lost[:min(5, len(lost))])
	}
}
