package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/forward"
	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/firmware-bridge/transport"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// hangGuard bounds waits on conditions; it is never a timing assumption.
const hangGuard = 30 * time.Second

// runBowl connects mcu to the agent listening on sock, pushes one weight
// batch per value (seqs from the MCU's next), waits until the agent
// acknowledged them all and disconnects, as a bowl that is unplugged.
func runBowl(t *testing.T, sock string, mcu *sim.MCU, grams ...int32) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	conn, err := transport.DialUnix(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = mcu.Run(ctx, conn) })
	defer func() { cancel(); conn.Close(); wg.Wait() }()
	last := mcu.NextSeq() + uint32(len(grams)) - 1
	for i, g := range grams {
		if err := mcu.Push(ctx, uint32(1000*(i+1)), frame.WeightBatch{RateHz: 50, Milligrams: []int32{g * 1000}}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, "the agent acknowledged every batch", hangGuard, func() bool {
		st := mcu.Stats()
		return st.RingLen == 0 && st.Freed > 0 && st.AckedThrough == last
	})
}

func startListeningAgent(t *testing.T) (*Agent, string) {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "bowls.sock")
	a, err := New(Config{
		Outbox:     outbox.Config{Path: filepath.Join(dir, "outbox.db")},
		Forward:    forward.Config{Broker: "tcp://127.0.0.1:1", Tenant: "t1", ClientID: "gw-epoch", BackoffMin: time.Second, BackoffMax: time.Second, Rule: "bowline_test_telemetry"},
		StatusAddr: "off",
		Inputs:     []Input{{Kind: InputListen, Path: sock}},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	testkit.WaitFor(t, "the agent listens", hangGuard, func() bool {
		c, err := transport.DialUnix(ctx, sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return a, sock
}

func storedGrams(t *testing.T, o *outbox.Outbox, thing string) []float64 {
	t.Helper()
	b, _, err := o.TelemetryBatch(t.Context(), thing, 0, outbox.BatchLimit{MaxSamples: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var g []float64
	for _, s := range b.Samples {
		g = append(g, s.Value)
	}
	return g
}

// TestCounterResetKeepsData: a bowl's board is swapped (or its flash
// erased): the new MCU has the same device id, a new boot epoch and its
// seqs start at 1 again. Its readings are kept, not acknowledged and
// dropped as duplicates of the old counter's, and a bowl.counter_reset
// event reports the reset.
func TestCounterResetKeepsData(t *testing.T) {
	a, sock := startListeningAgent(t)
	quiet := slog.New(slog.DiscardHandler)
	old, err := sim.NewMCU(sim.MCUConfig{DeviceID: "bowl-r", FirstSeq: 1, BootEpoch: 0x11111111, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	runBowl(t, sock, old, 101, 102, 103)
	swapped, err := sim.NewMCU(sim.MCUConfig{DeviceID: "bowl-r", FirstSeq: 1, BootEpoch: 0x22222222, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	runBowl(t, sock, swapped, 201, 202)

	if got, want := storedGrams(t, a.Outbox(), "gw-epoch:bowl-r"), []float64{101, 102, 103, 201, 202}; !equalFloats(got, want) {
		t.Fatalf("stored weights %v; want %v (the new counter's readings kept)", got, want)
	}
	evs, err := a.Outbox().Events(t.Context(), "gw-epoch:bowl-r", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Type != wire.TypeCounterReset || evs[0].ID != "counter_reset-22222222-1" {
		t.Fatalf("events %+v; want one %s", evs, wire.TypeCounterReset)
	}
	var data map[string]uint32
	if err := json.Unmarshal(evs[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint32{"old_epoch": 0x11111111, "new_epoch": 0x22222222, "last_seq": 3, "first_seq": 1}
	for k, v := range want {
		if data[k] != v {
			t.Fatalf("counter_reset data %v; want %v", data, want)
		}
	}
}

// TestV1FirmwareStillWorks: an MCU that sends no boot epoch (protocol
// version 1 firmware) reconnects with its counter carried on; nothing is
// duplicated or reported as a reset.
func TestV1FirmwareStillWorks(t *testing.T) {
	a, sock := startListeningAgent(t)
	mcu, err := sim.NewMCU(sim.MCUConfig{DeviceID: "bowl-v1", FirstSeq: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	runBowl(t, sock, mcu, 11, 12)
	runBowl(t, sock, mcu, 13)
	if got, want := storedGrams(t, a.Outbox(), "gw-epoch:bowl-v1"), []float64{11, 12, 13}; !equalFloats(got, want) {
		t.Fatalf("stored weights %v; want %v", got, want)
	}
	if evs, _ := a.Outbox().Events(t.Context(), "gw-epoch:bowl-v1", 0, 10); len(evs) != 0 {
		t.Fatalf("events %+v; want none", evs)
	}
	if st := a.bridge.Stats(); st.CounterResets != 0 {
		t.Fatalf("bridge counter resets = %d; want 0", st.CounterResets)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSinkEpochRules: the sink's dedup key is (epoch, seq). A firmware
// update that adopts boot epochs keeps its counter (epoch 0 to E, seq
// moving on): no reset, and the old watermark (4 bytes) still dedups. A
// new epoch with seqs back at 1 is a reset: kept and reported once, and
// its detector event ids carry the epoch.
func TestSinkEpochRules(t *testing.T) {
	ctx := t.Context()
	m := &memOutbox{state: map[string][]byte{lastKey("bowl-1"): {0, 0, 0, 7}}} // stored by a gateway before epochs
	s := newSink(t, m)
	if err := s.Deliver(ctx, weights("bowl-1", 6, 7)); err != nil { // resent before the update
		t.Fatal(err)
	}
	recs := weights("bowl-1", 8) // a rebooted MCU resumes above what it sent
	recs[0].Epoch = 0xE1         // the updated firmware's first epoch
	if err := s.Deliver(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if got := values(m.entries); len(got) != 2 || got[0] != 8 || len(m.entries) != 2 {
		t.Fatalf("after the firmware update: entries %+v; want only seq 8's two samples, no reset", m.entries)
	}
	reset := weights("bowl-1", 1, 2)
	for i := range reset {
		reset[i].Epoch = 0xE2
	}
	if err := s.Deliver(ctx, reset); err != nil {
		t.Fatal(err)
	}
	if err := s.Deliver(ctx, reset); err != nil { // and again, after a gateway restart
		t.Fatal(err)
	}
	var resets int
	for _, e := range m.entries {
		if e.Type == TypeCounterReset {
			resets++
		}
	}
	if got := values(m.entries); len(got) != 6 || resets != 1 {
		t.Fatalf("after the reset: telemetry %v and %d resets; want 6 samples and 1 reset", got, resets)
	}
	if ok, epoch, seq := decodeLast(m.state[lastKey("bowl-1")]); !ok || epoch != 0xE2 || seq != 2 {
		t.Fatalf("stored watermark = %v %x %d; want epoch e2 seq 2", ok, epoch, seq)
	}
	if got := epochID("meal-1.0", 0xE2); got != "meal-1.0-e000000e2" || !wire.ValidName(got) {
		t.Fatalf("epochID = %q; want meal-1.0-e000000e2, a valid name", got)
	}
}
