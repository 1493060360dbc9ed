package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/firmware-bridge/transport"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// startGateway re-executes the test binary as a bridge process on tty.
func startGateway(t *testing.T, tty, out string, run, stallAfter int) *testkit.Child {
	t.Helper()
	cmd := testkit.TestBinary("-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"=1", envTTY+"="+tty, envOut+"="+out,
		fmt.Sprintf("%s=%d", envRun, run), fmt.Sprintf("%s=%d", envStallAfter, stallAfter))
	logf, err := os.Create(filepath.Join(filepath.Dir(out), fmt.Sprintf("gateway-%d.log", run)))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	t.Cleanup(func() { // runs after the child's cleanup has reaped it
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("gateway %d log:\n%s", run, b)
		}
	})
	return testkit.StartChild(t, fmt.Sprintf("gateway %d", run), cmd)
}

func readSinkFile(t *testing.T, path string) []sinkLine {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []sinkLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l sinkLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			// A line cut by SIGKILL mid-write was never confirmed; stop there.
			break
		}
		out = append(out, l)
	}
	return out
}

// TestGatewayRestart: a real gateway process (this test binary re-executed)
// runs the bridge on a pty with a file sink that fsyncs. After 300 records
// the sink stops confirming (the batch is durable, the ack never goes), the
// MCU's ring fills and refuses a reading (backpressure), and the gateway is
// killed with SIGKILL and restarted. The MCU retransmits its ring. Every
// reading the MCU numbered must be in the sink; within each process nothing
// is delivered twice; across the restart the only repeats are records the
// first process made durable but never acknowledged, all with sequence
// numbers at or below what it stored, so deduplicating by (Device, Seq)
// leaves each reading exactly once, in order.
func TestGatewayRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // hang guard only
	defer cancel()
	dir := t.TempDir()
	out := filepath.Join(dir, "sink.jsonl")
	p, err := transport.OpenPTY()
	if err != nil {
		t.Fatalf("OpenPTY: %v", err)
	}
	t.Cleanup(func() { p.Close() })

	const (
		total      = 3000
		stallAfter = 300
		ringSize   = 64
		first      = ^uint32(0) - 500
	)
	mcu, err := sim.NewMCU(sim.MCUConfig{DeviceID: "bowl-restart", RingSize: ringSize, RetransmitTimeout: 50 * time.Millisecond,
		FirstSeq: first, Logger: testkit.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatal(err)
	}
	mcuCtx, stopMCU := context.WithCancel(ctx)
	mcuDone := make(chan error, 1)
	go func() { mcuDone <- mcu.Run(mcuCtx, p.Master) }()
	t.Cleanup(func() { stopMCU(); <-mcuDone })

	pushed := make(chan error, 1)
	go func() {
		for i := 0; i < total; i++ {
			if err := mcu.Push(ctx, uint32(i), reading(i)); err != nil {
				pushed <- err
				return
			}
		}
		pushed <- nil
	}()

	gw1 := startGateway(t, p.Path, out, 1, stallAfter)
	testkit.WaitFor(t, "the first gateway to store 300 records and the MCU ring to fill", 2*time.Minute, func() bool {
		return len(readSinkFile(t, out)) >= stallAfter && mcu.Stats().RingLen == ringSize
	})
	// The ring is full (the producer waits in Push): a reading that cannot
	// wait is refused, and reported later in a FaultRingOverflow frame.
	if ok, err := mcu.Offer(0, frame.Temperature{CentiCelsius: -1}); ok || err != nil {
		t.Fatalf("Offer on a full ring = %v, %v; want refused", ok, err)
	}
	if err := gw1.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = gw1.Wait(ctx)
	stored1 := readSinkFile(t, out)
	acked1 := mcu.Stats().AckedThrough
	if err := p.ReleaseExclusive(); err != nil {
		t.Fatal(err)
	}

	startGateway(t, p.Path, out, 2, 0)
	if err := <-pushed; err != nil {
		t.Fatalf("producer: %v", err)
	}
	testkit.WaitFor(t, "every reading to be acknowledged", 2*time.Minute, func() bool {
		s := mcu.Stats()
		return s.RingLen == 0 && s.Freed == s.Accepted
	})

	ms := mcu.Stats()
	lines := readSinkFile(t, out)
	// Within each process: strictly consecutive, no repeats.
	var last1 uint32
	var firstOf2 *uint32
	for i := 1; i < len(lines); i++ {
		a, b := lines[i-1], lines[i]
		if a.Run == b.Run && b.Frame.Seq != a.Frame.Seq+1 {
			t.Fatalf("run %d delivered seq %d after %d; want consecutive", b.Run, b.Frame.Seq, a.Frame.Seq)
		}
		if a.Run == 1 && b.Run == 2 {
			last1, firstOf2 = a.Frame.Seq, &b.Frame.Seq
		}
	}
	if firstOf2 == nil {
		t.Fatalf("sink file has no run 1 -> run 2 boundary (%d lines)", len(lines))
	}
	// Across the restart: no hole; repeats only of records run 1 stored.
	if !seqLE(*firstOf2, last1+1) {
		t.Fatalf("run 2 started at seq %d after run 1 stored up to %d; want no gap", *firstOf2, last1)
	}
	repeats := int32(last1 - *firstOf2 + 1)
	if repeats <= 0 || int(repeats) > len(stored1) {
		t.Fatalf("repeated across restart: %d; want > 0 (durable but unacked) and <= %d", repeats, len(stored1))
	}
	// acked1 was read after the kill; an ack still in the pty could only
	// raise it, so it is a lower bound for where run 2 starts.
	if !seqLE(acked1+1, *firstOf2) || !seqLE(acked1, last1) {
		t.Fatalf("run 2 starts at %d, run 1 acked %d and stored %d; want acked < start <= stored+1", *firstOf2, acked1, last1)
	}

	// Deduplicate by (Device, Seq) as the sink contract says and compare
	// with what the MCU numbered.
	var got []sinkLine
	for _, l := range lines {
		if len(got) == 0 || !seqLE(l.Frame.Seq, got[len(got)-1].Frame.Seq) {
			got = append(got, l)
		}
	}
	if uint64(len(got)) != ms.Accepted || got[0].Frame.Seq != first || got[len(got)-1].Frame.Seq != ms.AckedThrough {
		t.Fatalf("after dedup: %d records, seq %d..%d; want %d records, seq %d..%d",
			len(got), got[0].Frame.Seq, got[len(got)-1].Frame.Seq, ms.Accepted, first, ms.AckedThrough)
	}
	i, overflowReports := 0, 0
	for _, l := range got {
		if f, ok := l.Frame.Body.(frame.Fault); ok && f.Code == frame.FaultRingOverflow {
			overflowReports++
			if f.Detail != "1 readings refused: ring full" {
				t.Errorf("overflow fault detail %q; want %q", f.Detail, "1 readings refused: ring full")
			}
			continue
		}
		if !reflect.DeepEqual(l.Frame.Body, reading(i)) {
			t.Fatalf("reading %d (seq %d) = %+v; want %+v", i, l.Frame.Seq, l.Frame.Body, reading(i))
		}
		i++
	}
	if i != total || overflowReports != 1 || ms.Refused != 1 {
		t.Fatalf("readings %d, overflow reports %d, refused %d; want %d, 1, 1", i, overflowReports, ms.Refused, total)
	}
	t.Logf("run 1 stored %d (acked through %d), %d repeated after the restart; MCU %+v", len(stored1), acked1, repeats, ms)
}

func seqLE(a, b uint32) bool { return int32(b-a) >= 0 }
