package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestBytesPerSample holds the batch to its target, at most 1.5 payload
// bytes per sample, on two busy simulated hours (boot at 06:30: the
// morning refill and meals) of 1.5 bowls per gateway at 50 Hz, one batch
// per gateway per minute. It is a compression ratio of a deterministic
// run, not a timing.
func TestBytesPerSample(t *testing.T) {
	testkit.Long(t, "simulates two hours of three bowls")
	p := params{Gateways: 2, Duration: 2 * time.Hour, Hours: 2, Seed: 1, RateHz: 50, V1: true,
		Start: time.Date(2026, 1, 5, 6, 30, 0, 0, time.UTC)}
	r, err := measure(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	report(&out, r)
	t.Log("\n" + out.String())
	if want := int64(3 * 2 * 3600 * 50); r.SamplesByKind["weight_g"] != int(want) {
		t.Errorf("weight_g samples = %d; want %d (3 bowls, 2 h, 50 Hz)", r.SamplesByKind["weight_g"], want)
	}
	if r.SamplesByKind["lid_open"] == 0 {
		t.Errorf("no lid_open samples: the window holds no refill; move it")
	}
	if r.Batch.BytesPerSample > 1.5 {
		t.Errorf("batch bytes/sample = %.3f; want <= 1.5", r.Batch.BytesPerSample)
	}
	if r.Batch.MaxPerGatewayMinute != 1 {
		t.Errorf("at most %d messages per gateway minute; want 1", r.Batch.MaxPerGatewayMinute)
	}
	if r.V1Ratio < 10 {
		t.Errorf("v1 JSON is %.1fx the batch; want at least 10x", r.V1Ratio)
	}
}

// TestDeterministic: the same flags give the same bytes.
func TestDeterministic(t *testing.T) {
	p := params{Gateways: 2, Duration: 10 * time.Minute, Hours: 1.0 / 6, Seed: 5, RateHz: 50,
		Start: time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC)}
	a, err := measure(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := measure(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if a.Batch.Bytes != b.Batch.Bytes || a.Samples != b.Samples {
		t.Errorf("two runs: %d / %d bytes, %d / %d samples; want the same", a.Batch.Bytes, b.Batch.Bytes, a.Samples, b.Samples)
	}
}

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "--json") && !strings.Contains(errOut.String(), "-json") {
		t.Errorf("--help: exit %d, output %q; want 0 and the flags", code, errOut.String())
	}
}
