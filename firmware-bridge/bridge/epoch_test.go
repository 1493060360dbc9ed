package bridge_test

import (
	"testing"

	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
)

// TestNewBootEpochOnTheSameLink: the MCU's flash is erased while the link
// stays up; it says hello with a new boot epoch and seq 1 again. The
// bridge must take seq 1 as the next frame of the new counter, not drop it
// as a duplicate of the old one, and tag each record with its epoch.
func TestNewBootEpochOnTheSameLink(t *testing.T) {
	sink := &memSink{}
	br, m := startBridge(t, bridge.Config{Sink: sink})
	h := hello
	h.BootEpoch = 0xA1
	m.send(40, h)
	m.send(40, temp(40))
	if a := m.ack(); a.Cumulative != 40 {
		t.Fatalf("ack = %+v; want 40", a)
	}
	h.BootEpoch = 0xB2
	m.send(1, h)
	m.send(1, temp(1))
	if a := m.ack(); a.Cumulative != 1 || a.Resend {
		t.Fatalf("ack after the reset = %+v; want cumulative 1 of the new counter", a)
	}
	recs := sink.snapshot()
	if len(recs) != 2 || recs[0].Epoch != 0xA1 || recs[0].Seq != 40 || recs[1].Epoch != 0xB2 || recs[1].Seq != 1 {
		t.Fatalf("sink got %+v; want seq 40 of epoch a1, then seq 1 of epoch b2", recs)
	}
	if s := br.Stats(); s.CounterResets != 1 || s.Duplicates != 0 {
		t.Fatalf("Stats() = %+v; want 1 counter reset, no duplicates", s)
	}
}
