package bridge_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// scriptedMCU is the test's hand-driven MCU end of a net.Pipe.
type scriptedMCU struct {
	t    *testing.T
	conn net.Conn
	in   chan frame.Frame
}

func startBridge(t *testing.T, cfg bridge.Config) (*bridge.Bridge, *scriptedMCU) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testkit.Logger(t, slog.LevelWarn)
	}
	br, err := bridge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gw, dev := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- br.Run(ctx, gw) }()
	m := &scriptedMCU{t: t, conn: dev, in: make(chan frame.Frame, 256)}
	go func() {
		d := frame.NewDecoder(dev)
		for {
			f, err := d.Next()
			if err != nil {
				close(m.in)
				return
			}
			m.in <- f
		}
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v; want context.Canceled", err)
		}
		dev.Close()
	})
	return br, m
}

func (m *scriptedMCU) send(seq uint32, body frame.Body) {
	m.t.Helper()
	w, err := frame.Encode(frame.Frame{Seq: seq, UptimeMillis: seq * 1000, Body: body})
	if err != nil {
		m.t.Fatal(err)
	}
	if _, err := m.conn.Write(w); err != nil {
		m.t.Fatal(err)
	}
}

// ack waits for the next ack, skipping pings and time syncs.
func (m *scriptedMCU) ack() frame.Ack {
	m.t.Helper()
	for {
		select {
		case f, ok := <-m.in:
			if !ok {
				m.t.Fatal("link closed")
			}
			if a, ok := f.Body.(frame.Ack); ok {
				return a
			}
		case <-time.After(time.Minute): // hang guard
			m.t.Fatal("no ack from the bridge")
		}
	}
}

var hello = frame.Hello{DeviceID: "bowl-7", SampleRateHz: 50}

// TestGapDuplicateAndBeforeHello drives the bridge with hand-made frames:
// data before hello is dropped; a hole triggers a resend request and the
// frame after it is dropped; a repeat is dropped and re-acked; the sink
// gets each number once, in order.
func TestGapDuplicateAndBeforeHello(t *testing.T) {
	sink := &memSink{}
	reg := prometheus.NewRegistry()
	met, err := bridge.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	br, m := startBridge(t, bridge.Config{Sink: sink, Observer: met, ResendInterval: time.Nanosecond})
	m.send(9, temp(9)) // before hello: dropped
	m.send(10, hello)
	m.send(10, temp(10))
	if a := m.ack(); a != (frame.Ack{Cumulative: 10}) {
		t.Fatalf("ack = %+v; want cumulative 10", a)
	}
	m.send(12, temp(12)) // 11 is missing
	if a := m.ack(); a != (frame.Ack{Cumulative: 10, Resend: true}) {
		t.Fatalf("ack after a hole = %+v; want 10 with resend", a)
	}
	m.send(11, temp(11))
	if a := m.ack(); a.Cumulative != 11 {
		t.Fatalf("ack = %+v; want 11", a)
	}
	m.send(10, temp(10)) // a retransmission
	if a := m.ack(); a != (frame.Ack{Cumulative: 11}) {
		t.Fatalf("ack after a duplicate = %+v; want a repeated 11", a)
	}
	m.send(12, temp(12))
	if a := m.ack(); a.Cumulative != 12 {
		t.Fatalf("ack = %+v; want 12", a)
	}
	var seqs []uint32
	for _, r := range sink.snapshot() {
		seqs = append(seqs, r.Seq)
		if r.Device != "bowl-7" || r.Uptime != time.Duration(r.Seq)*time.Second || r.Body != temp(int(r.Seq)) {
			t.Errorf("record %+v; want device bowl-7, uptime seq*1s, body temp(seq)", r)
		}
	}
	if len(seqs) != 3 || seqs[0] != 10 || seqs[1] != 11 || seqs[2] != 12 {
		t.Fatalf("sink got seqs %v; want [10 11 12]", seqs)
	}
	if s := br.Stats(); s.Gaps != 1 || s.Duplicates != 1 || s.Delivered != 3 {
		t.Fatalf("Stats() = %+v; want 1 gap, 1 duplicate, 3 delivered", s)
	}
	for _, c := range []struct {
		name, label, value string
		want               float64
	}{
		{"bowline_bridge_frames_dropped_total", "reason", "before_hello", 1},
		{"bowline_bridge_frames_dropped_total", "reason", "crc", 0},
		{"bowline_bridge_sequence_gaps_total", "device", "bowl-7", 1},
		{"bowline_bridge_duplicates_total", "device", "bowl-7", 1},
		{"bowline_bridge_records_delivered_total", "device", "bowl-7", 3},
	} {
		if got := counter(t, reg, c.name, c.label, c.value); got != c.want {
			t.Errorf("%s{%s=%q} = %v; want %v", c.name, c.label, c.value, got, c.want)
		}
	}
}

// counter reads one counter series from reg (-1 when absent).
func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

func temp(c int) frame.Body { return frame.Temperature{CentiCelsius: int16(c)} }

// TestAckOnlyAfterDurable: while the sink fails, no ack covers the batch;
// the bridge retries the same batch and acks once the sink succeeds.
func TestAckOnlyAfterDurable(t *testing.T) {
	var fails atomic.Int32
	fails.Store(2)
	var durable atomic.Bool
	var mu sync.Mutex
	var batches [][]uint32
	sink := bridge.SinkFunc(func(_ context.Context, b []bridge.Record) error {
		mu.Lock()
		defer mu.Unlock()
		var seqs []uint32
		for _, r := range b {
			seqs = append(seqs, r.Seq)
		}
		batches = append(batches, seqs)
		if fails.Add(-1) >= 0 {
			return errors.New("disk full")
		}
		durable.Store(true)
		return nil
	})
	br, m := startBridge(t, bridge.Config{Sink: sink, RetryMin: time.Millisecond, RetryMax: time.Millisecond})
	m.send(0, hello)
	m.send(0, temp(0))
	a := m.ack()
	if !durable.Load() || a.Cumulative != 0 || a.Resend {
		t.Fatalf("ack %+v with durable=%v; want an ack of 0 only after the sink succeeded", a, durable.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(batches) != 3 {
		t.Fatalf("Deliver called %d times (%v); want 3: two failures and the same batch again", len(batches), batches)
	}
	if s := br.Stats(); s.DeliverErrors != 2 || s.Delivered != 1 {
		t.Fatalf("Stats() = %+v; want 2 deliver errors, 1 delivered", s)
	}
}

// TestHelloAfterRestartResumesAtOldestUnacked: a fresh bridge adopts the
// hello's sequence number, even across the 32-bit wrap.
func TestHelloAfterRestartResumesAtOldestUnacked(t *testing.T) {
	sink := &memSink{}
	_, m := startBridge(t, bridge.Config{Sink: sink})
	m.send(0xFFFFFFFF, hello)
	m.send(0xFFFFFFFF, temp(1))
	if a := m.ack(); a.Cumulative != 0xFFFFFFFF {
		t.Fatalf("ack %+v; want 0xFFFFFFFF", a)
	}
	m.send(0, temp(2))
	if a := m.ack(); a.Cumulative != 0 {
		t.Fatalf("ack %+v; want 0 after the wrap", a)
	}
	if got := sink.snapshot(); len(got) != 2 || got[1].Seq != 0 {
		t.Fatalf("sink got %+v; want seqs 0xFFFFFFFF then 0", got)
	}
}
