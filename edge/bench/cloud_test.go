package main

import (
	"slices"
	"testing"
	"time"
)

func TestCloudRecord(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC)
	msgs := []struct {
		topic   string
		payload string
	}{
		{"dt/bowline/t1/bowl-0/telemetry", `{"v":1,"thing":"bowl-0","seq":0,"samples":[{"t":"2026-01-05T07:00:00Z","kind":"weight_g","value":0.001},{"t":"2026-01-05T07:00:00.02Z","kind":"weight_g","value":0.002}]}`},
		// the same message again (a redelivery): duplicates, not new samples
		{"dt/bowline/t1/bowl-0/telemetry", `{"v":1,"thing":"bowl-0","seq":0,"samples":[{"t":"2026-01-05T07:00:00Z","kind":"weight_g","value":0.001},{"t":"2026-01-05T07:00:00.02Z","kind":"weight_g","value":0.002}]}`},
		{"dt/bowline/t1/bowl-1/telemetry", `{"v":1,"thing":"bowl-1","seq":7,"samples":[{"t":"2026-01-05T07:00:00Z","kind":"weight_g","value":3000.5}]}`},
		{"dt/bowline/t1/bowl-0/events", `{"v":1,"thing":"bowl-0","seq":1,"id":"e1","type":"bowl.refilled","at":"2026-01-05T07:00:00Z","data":{}}`},
		{"dt/bowline/t1/bowl-0/telemetry", `not json`},
		{"dt/bowline/t1/gw/status", `{"v":1,"thing":"gw","state":"online"}`},
	}
	c := &cloud{arrived: map[string][]int64{}}
	for i, m := range msgs {
		c.record(m.topic, []byte(m.payload), t0.Add(time.Duration(i)*time.Second))
	}
	want := cloudCounts{Messages: 3, Samples: 5, Distinct: 3, Events: 1, Bad: 1}
	if got := c.Counts(); got != want {
		t.Fatalf("Counts() = %+v; want %+v", got, want)
	}
	arrivals := []struct {
		thing string
		n     int32
		want  time.Time
	}{
		{"bowl-0", 1, t0}, // first arrival kept
		{"bowl-0", 2, t0},
		{"bowl-1", 3000500, t0.Add(2 * time.Second)},
		{"bowl-0", 3, time.Time{}},
		{"bowl-9", 1, time.Time{}},
	}
	for _, a := range arrivals {
		if got := c.Arrival(a.thing, a.n); !got.Equal(a.want) {
			t.Errorf("Arrival(%s, %d) = %v; want %v", a.thing, a.n, got, a.want)
		}
	}
}

func TestSampleNumber(t *testing.T) {
	tests := []struct {
		grams float64
		want  int32
	}{{0.001, 1}, {0.05, 50}, {250.0, 250000}, {1234.567, 1234567}, {-0.001, -1}, {3e6, -1}}
	for _, tt := range tests {
		if got := sampleNumber(tt.grams); got != tt.want {
			t.Errorf("sampleNumber(%v) = %d; want %d", tt.grams, got, tt.want)
		}
	}
}

func TestCountAndLatencies(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC)
	logs := newBowlLogs(1)
	l := logs[0]
	f0 := l.add(l.nextFrame(2), t0)                    // samples 1,2: acked, both arrive
	f1 := l.add(l.nextFrame(2), t0.Add(time.Second))   // samples 3,4: acked, 4 never arrives
	_ = l.add(l.nextFrame(2), t0.Add(2*time.Second))   // samples 5,6: not acked, never arrive
	f3 := l.add(l.nextFrame(1), t0.Add(3*time.Second)) // sample 7: not acked, arrives anyway
	l.setAcked(f0)
	l.setAcked(f1)
	c := &cloud{arrived: map[string][]int64{}}
	c.record("dt/bowline/t1/bowl-0/telemetry", []byte(`{"v":1,"thing":"bowl-0","seq":0,"samples":[{"value":0.001},{"value":0.002}]}`), t0.Add(5*time.Millisecond))
	c.record("dt/bowline/t1/bowl-0/telemetry", []byte(`{"v":1,"thing":"bowl-0","seq":2,"samples":[{"value":0.003},{"value":0.007}]}`), t0.Add(time.Second+8*time.Millisecond))
	_ = f3
	want := tally{Pushed: 7, Acked: 4, AtCloud: 4, Lost: 1, UnackedLost: 2}
	if got := count(logs, c); got != want {
		t.Fatalf("count = %+v; want %+v", got, want)
	}
	// Frames handed over in [t0, t0+2s): frame 0 (first sample there 5 ms
	// later) and frame 1 (8 ms); frame 2 never arrived and frame 3 is
	// outside the window.
	lat := latencies(logs, c, t0, t0.Add(2*time.Second))
	if !slices.Equal(lat, []time.Duration{5 * time.Millisecond, 8 * time.Millisecond}) {
		t.Fatalf("latencies = %v; want [5ms 8ms]", lat)
	}
}
