package bridge

import (
	"testing"
	"time"
)

func TestClockUnwrap(t *testing.T) {
	var c clock
	ms := time.Millisecond
	for _, tc := range []struct {
		raw  uint32
		want time.Duration
	}{
		{0xFFFFFF00, 0xFFFFFF00 * ms},
		{0xFFFFFFFF, 0xFFFFFFFF * ms},
		{0x00000010, (1<<32 + 0x10) * ms}, // wrapped forward
		{0xFFFFFFF0, (1<<32 - 0x10) * ms}, // an older, retransmitted frame
		{0x00000020, (1<<32 + 0x20) * ms},
	} {
		if got := c.unwrap(tc.raw); got != tc.want {
			t.Fatalf("unwrap(%#x) = %v; want %v", tc.raw, got, tc.want)
		}
	}
}

func TestClockPrefersShortestRoundTrip(t *testing.T) {
	var c clock
	t0 := time.Unix(1_700_000_000, 0)
	c.anchor(t0, 5*time.Second)
	if got := c.wall(5 * time.Second); !got.Equal(t0) {
		t.Fatalf("anchored wall = %v; want %v", got, t0)
	}
	// Device uptime 10 s answered at the midpoint of a 20 ms round trip
	// sent at t0+4.99s: the device booted at t0-5s.
	off, rtt := c.observe(t0.Add(4990*time.Millisecond), t0.Add(5010*time.Millisecond), 10*time.Second)
	if rtt != 20*time.Millisecond || time.Unix(0, int64(off)) != t0.Add(-5*time.Second) {
		t.Fatalf("observe = offset %v rtt %v; want boot at %v, 20ms", time.Unix(0, int64(off)), rtt, t0.Add(-5*time.Second))
	}
	// A slow round trip (asymmetric delay) does not displace the good one.
	c.observe(t0.Add(6*time.Second), t0.Add(7*time.Second), 11*time.Second)
	if got, want := c.wall(12*time.Second), t0.Add(7*time.Second); !got.Equal(want) {
		t.Fatalf("wall(12s) = %v; want %v", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	sink := SinkFunc(nil)
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{Sink: sink}, true},
		{Config{}, false},
		{Config{Sink: sink, MaxBatch: -1}, false},
		{Config{Sink: sink, RetryMin: time.Second, RetryMax: time.Millisecond}, false},
		{Config{Sink: sink, HelloRetry: -1}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v; want ok=%v", tc.cfg, err, tc.ok)
		}
	}
}
