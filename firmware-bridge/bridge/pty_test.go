package bridge_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/firmware-bridge/transport"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestPTYLossyLink sends 100,000 readings (5,000 with -short) from the MCU model through a
// real pseudo-terminal (the bridge opens the tty with the serial driver) at
// a simulated 115200 baud, with 1% of frames corrupted and 0.5% losing a
// byte in each direction. Every frame the MCU considers acknowledged must
// reach the sink exactly once, in order, with its body intact; the
// sequence numbers cross the 2^32 wrap.
func TestPTYLossyLink(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 5_000
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute) // hang guard only
	defer cancel()

	p, err := transport.OpenPTY()
	if err != nil {
		t.Fatalf("OpenPTY: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	port, err := transport.OpenSerial(p.Path, transport.SerialConfig{Baud: 115200})
	if err != nil {
		t.Fatalf("OpenSerial(%s): %v", p.Path, err)
	}
	meter := &sim.BaudMeter{ReadWriter: p.Master, Baud: 115200}
	mcuSide := sim.NewLossy(meter, 0.01, 0.005, 1)
	gwSide := sim.NewLossy(port, 0.01, 0.005, 2)

	const first = ^uint32(0) - 1000 // wraps after 1001 frames
	mcu, err := sim.NewMCU(sim.MCUConfig{DeviceID: "bowl-pty", RingSize: 32, RetransmitTimeout: 25 * time.Millisecond,
		FirstSeq: first, Uptime: meter.Uptime, Logger: testkit.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	br, err := bridge.New(bridge.Config{Sink: sink, Logger: testkit.Logger(t, slog.LevelWarn), ResendInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mcuDone, brDone := make(chan error, 1), make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	go func() { mcuDone <- mcu.Run(runCtx, mcuSide) }()
	go func() { brDone <- br.Run(runCtx, gwSide) }()

	start := time.Now()
	for i := 0; i < n; i++ {
		if err := mcu.Push(ctx, meter.Uptime(), reading(i)); err != nil {
			t.Fatalf("Push(%d): %v (MCU %+v, bridge %+v)", i, err, mcu.Stats(), br.Stats())
		}
	}
	for mcu.Stats().Freed < uint64(n) {
		select {
		case <-ctx.Done():
			t.Fatalf("not all acknowledged before the hang guard: MCU %+v, bridge %+v", mcu.Stats(), br.Stats())
		case <-time.After(10 * time.Millisecond):
		}
	}
	stop()
	for _, c := range []chan error{mcuDone, brDone} {
		if err := <-c; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v; want context.Canceled", err)
		}
	}

	ms := mcu.Stats()
	if want := first + uint32(n) - 1; ms.AckedThrough != want || ms.RingLen != 0 {
		t.Fatalf("MCU acked through %d with %d in ring; want %d and 0", ms.AckedThrough, ms.RingLen, want)
	}
	got := sink.snapshot()
	if len(got) != n {
		t.Fatalf("sink got %d records; want %d exactly once each", len(got), n)
	}
	for i, r := range got {
		if want := first + uint32(i); r.Seq != want || r.Device != "bowl-pty" {
			t.Fatalf("record %d = %s/%d; want bowl-pty/%d (in order, no duplicates)", i, r.Device, r.Seq, want)
		}
		if !reflect.DeepEqual(r.Body, reading(i)) {
			t.Fatalf("record %d body = %+v; want %+v", i, r.Body, reading(i))
		}
	}
	c1, d1 := mcuSide.Damaged()
	c2, d2 := gwSide.Damaged()
	bs := br.Stats()
	t.Logf("%d frames in %v real, %.0f s simulated at 115200 baud; damaged mcu->gw %d+%d, gw->mcu %d+%d; "+
		"MCU transmitted %d (retransmitted %d, timeouts %d, resends %d); bridge gaps %d duplicates %d acks %d",
		n, time.Since(start).Round(time.Millisecond), float64(meter.Uptime())/1000, c1, d1, c2, d2,
		ms.Transmitted, ms.Retransmitted, ms.Timeouts, ms.Resends, bs.Gaps, bs.Duplicates, bs.Acks)
	if c1 == 0 || bs.Gaps == 0 || ms.Retransmitted == 0 {
		t.Errorf("no damage or recovery exercised: corrupted %d, gaps %d, retransmitted %d", c1, bs.Gaps, ms.Retransmitted)
	}
}
