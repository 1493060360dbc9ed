package agent

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/detect"
	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// memOutbox is an in-memory Appender for the sink's pure logic.
type memOutbox struct {
	entries []outbox.Entry
	state   map[string][]byte
	fail    error
}

func (m *memOutbox) Append(_ context.Context, e []outbox.Entry, st map[string][]byte) error {
	if m.fail != nil {
		return m.fail
	}
	m.entries = append(m.entries, e...)
	if m.state == nil {
		m.state = map[string][]byte{}
	}
	for k, v := range st {
		m.state[k] = v
	}
	return nil
}

func (m *memOutbox) State(k string) ([]byte, error) { return m.state[k], nil }

var t0 = time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)

func weights(dev string, seqs ...uint32) []bridge.Record {
	var out []bridge.Record
	for _, s := range seqs {
		out = append(out, bridge.Record{Device: dev, Seq: s, At: t0.Add(time.Duration(s) * 100 * time.Millisecond),
			Body: frame.WeightBatch{RateHz: 50, Milligrams: []int32{int32(s) * 1000, int32(s)*1000 + 1}}})
	}
	return out
}

func newSink(t *testing.T, out Appender) *Sink {
	t.Helper()
	s, err := NewSink(out, nil, detect.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func values(es []outbox.Entry) []float64 {
	var v []float64
	for _, e := range es {
		if e.Lane == outbox.Telemetry {
			v = append(v, e.Value)
		}
	}
	return v
}

func TestSinkSkipsRecordsAlreadyStored(t *testing.T) {
	ctx := context.Background()
	m := &memOutbox{}
	s := newSink(t, m)
	if err := s.Deliver(ctx, weights("bowl-1", 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	// After a bridge restart the MCU resends 2 and 3 before 4 and 5.
	if err := s.Deliver(ctx, weights("bowl-1", 2, 3, 4, 5)); err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 1.001, 2, 2.001, 3, 3.001, 4, 4.001, 5, 5.001}
	if got := values(m.entries); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored samples = %v; want %v", got, want)
	}
	// A new sink over the same store (a restarted agent) remembers.
	s2 := newSink(t, m)
	if err := s2.Deliver(ctx, weights("bowl-1", 5, 6)); err != nil {
		t.Fatal(err)
	}
	if got := values(m.entries); len(got) != 12 || got[10] != 6 {
		t.Fatalf("after restart stored %v; want only seq 6 added", got)
	}
}

func TestSinkSerialArithmeticAcrossWrap(t *testing.T) {
	ctx := context.Background()
	m := &memOutbox{}
	s := newSink(t, m)
	if err := s.Deliver(ctx, weights("bowl-1", 0xFFFFFFFE, 0xFFFFFFFF)); err != nil {
		t.Fatal(err)
	}
	if err := s.Deliver(ctx, weights("bowl-1", 0xFFFFFFFF, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if got := len(values(m.entries)); got != 8 {
		t.Fatalf("stored %d samples; want 8 (seq 0 and 1 after the wrap are new)", got)
	}
}

func TestSinkRollsBackOnFailedAppend(t *testing.T) {
	ctx := context.Background()
	m := &memOutbox{}
	s := newSink(t, m)
	if err := s.Deliver(ctx, weights("bowl-1", 1)); err != nil {
		t.Fatal(err)
	}
	m.fail = outbox.ErrFull
	if err := s.Deliver(ctx, weights("bowl-1", 2)); !errors.Is(err, outbox.ErrFull) {
		t.Fatalf("Deliver with a full outbox = %v; want ErrFull", err)
	}
	m.fail = nil
	if err := s.Deliver(ctx, weights("bowl-1", 2)); err != nil {
		t.Fatal(err)
	}
	if got := values(m.entries); len(got) != 4 || got[2] != 2 {
		t.Fatalf("stored %v; want seq 2 stored once after the retry", got)
	}
}

func TestSinkFaultBecomesEvent(t *testing.T) {
	ctx := context.Background()
	m := &memOutbox{}
	s := newSink(t, m)
	err := s.Deliver(ctx, []bridge.Record{{Device: "bowl-1", Seq: 7, At: t0, Body: frame.Fault{Code: frame.FaultLoadCell, Detail: "load cell open"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.entries) != 1 || m.entries[0].Type != TypeDeviceFault || m.entries[0].ID != "fault-7" || string(m.entries[0].Data) != `{"code":1,"detail":"load cell open"}` {
		t.Fatalf("entries = %+v; want one bowl.device_fault fault-7", m.entries)
	}
}

func TestSinkOnRealOutboxSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outbox.db")
	o, err := outbox.Open(outbox.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := newSink(t, o).Deliver(ctx, weights("bowl-1", 1, 2)); err != nil {
		t.Fatal(err)
	}
	o.Close()
	o, err = outbox.Open(outbox.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := newSink(t, o).Deliver(ctx, weights("bowl-1", 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	st, _ := o.Stats()
	if st.Telemetry.Records != 6 {
		t.Fatalf("telemetry records = %d; want 6 (seq 1 and 2 not stored twice)", st.Telemetry.Records)
	}
}

func TestParseInput(t *testing.T) {
	tests := []struct {
		in   string
		want Input
		bad  bool
	}{
		{in: "serial:/dev/ttyAMA0", want: Input{Kind: InputSerial, Path: "/dev/ttyAMA0"}},
		{in: "serial:/dev/pts/3@9600", want: Input{Kind: InputSerial, Path: "/dev/pts/3"}},
		{in: "unix:/run/b.sock", want: Input{Kind: InputUnix, Path: "/run/b.sock"}},
		{in: "listen:/run/bowls.sock", want: Input{Kind: InputListen, Path: "/run/bowls.sock"}},
		{in: "serial:/dev/x@fast", bad: true},
		{in: "tcp:1.2.3.4", bad: true},
		{in: "serial:", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseInput(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseInput(%q) = %+v; want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got.Kind != tt.want.Kind || got.Path != tt.want.Path {
			t.Errorf("ParseInput(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}
