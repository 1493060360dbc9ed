package agent

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/forward"
	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/firmware-bridge/transport"
)

// TestClockStampsReadings: with Config.Clock set (a simulation's clock),
// the bridge maps device uptime onto that clock, not the process's, so a
// reading taken 4 s of uptime after the Hello is stamped 4 s after it.
func TestClockStampsReadings(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	const helloUptime = 1000 // ms; the MCU's clock for Hello and Pong
	mcu, err := sim.NewMCU(sim.MCUConfig{DeviceID: "bowl-clk", Uptime: func() uint32 { return helloUptime },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "bowl.sock")
	ln, err := transport.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); ln.Close(); wg.Wait() })
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = mcu.Run(ctx, c)
	})
	a, err := New(Config{
		Outbox:     outbox.Config{Path: filepath.Join(dir, "outbox.db")},
		Forward:    forward.Config{Broker: "tcp://127.0.0.1:1", Tenant: "t1", ClientID: "gw-clk", BackoffMin: time.Second, BackoffMax: time.Second, Rule: "bowline_test_telemetry"},
		StatusAddr: "off",
		Inputs:     []Input{{Kind: InputUnix, Path: sock}},
		Clock:      func() time.Time { return base },
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = a.Run(ctx) })
	if err := mcu.Push(ctx, helloUptime+4000, frame.WeightBatch{RateHz: 50, Milligrams: []int32{100000, 100000}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second) // hang guard only
	for {
		b, ok, err := a.Outbox().TelemetryBatch(ctx, "gw-clk:bowl-clk", 0, outbox.BatchLimit{MaxSamples: 10})
		if err != nil {
			t.Fatal(err)
		}
		if ok && len(b.Samples) > 0 {
			if got, want := b.Samples[0].At, base.Add(4*time.Second); !got.Equal(want) {
				t.Fatalf("first sample at %v; want %v (the Clock plus 4 s of uptime)", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no telemetry reached the outbox")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
