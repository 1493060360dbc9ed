package status

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/edge/outbox"

	"github.com/bowline-iot/bowline/edge/wire"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, func() (outbox.Stats, error) { return outbox.Stats{Events: outbox.LaneStats{Records: 3}}, nil })
	m.Connection(true)
	m.PubackTimeout(outbox.Events)
	now := time.Now()
	s, err := Listen(Config{Addr: "127.0.0.1:0", Gatherer: reg, Report: func(context.Context) (wire.GatewayStatus, error) {
		return wire.GatewayStatus{Tenant: "t1", Lanes: wire.LanesStatus{Events: LaneFrom(outbox.LaneStats{Records: 3, Oldest: now.Add(-time.Minute)}, now)}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + s.Addr()

	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz = %d %q; want 200 \"ok\\n\"", code, body)
	}
	code, body := get(t, base+"/status")
	var rep wire.GatewayStatus
	if err := json.Unmarshal([]byte(body), &rep); code != 200 || err != nil {
		t.Fatalf("/status = %d %s (%v); want 200 and a JSON report", code, body, err)
	}
	if rep.Lanes.Events.Backlog != 3 || rep.Lanes.Events.OldestAgeSeconds != 60 {
		t.Fatalf("/status events lane = %+v; want backlog 3, oldest 60s", rep.Lanes.Events)
	}
	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{`bowline_edge_outbox_backlog{lane="events"} 3`, "bowline_edge_mqtt_connected 1",
		`bowline_edge_mqtt_puback_timeouts_total{lane="events"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, metrics)
		}
	}
}

func TestDiskFromReportsTheBudget(t *testing.T) {
	d := DiskFrom("/data/outbox.db", outbox.Stats{FileBytes: 3 << 20, FreeBytes: 4096, MaxBytes: 256 << 20,
		Budget: outbox.Budget{FileFreeBytes: 4096, FSFreeBytes: 1 << 20, EffectiveMaxBytes: 2 << 20, DiskLimited: true}})
	want := wire.DiskStatus{Path: "/data/outbox.db", FileBytes: 3 << 20, FileFreeBytes: 4096, FSFreeBytes: 1 << 20,
		CapBytes: 256 << 20, EffectiveMaxBytes: 2 << 20, DiskLimited: true}
	if d != want {
		t.Fatalf("DiskFrom = %+v; want %+v", d, want)
	}
	b, _ := json.Marshal(d)
	for _, field := range []string{`"file_free_bytes":4096`, `"fs_free_bytes":1048576`, `"effective_max_bytes":2097152`, `"disk_limited":true`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("Disk JSON %s lacks %s", b, field)
		}
	}
	// free_bytes read as free disk space; it was the file's free pages.
	if strings.Contains(string(b), `"free_bytes"`) {
		t.Errorf("Disk JSON %s has the ambiguous free_bytes; want file_free_bytes and fs_free_bytes only", b)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "report") {
		t.Fatalf("Validate(empty) = %v; want an error naming report", err)
	}
	if err := (Config{Addr: "nonsense", Report: func(context.Context) (wire.GatewayStatus, error) { return wire.GatewayStatus{}, nil }}).Validate(); err == nil || !strings.Contains(err.Error(), "addr") {
		t.Fatalf("Validate(bad addr) = %v; want an error naming addr", err)
	}
}

func TestAcksFromReportsUnacknowledged(t *testing.T) {
	now := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	last := now.Add(-5 * time.Minute)
	a := AcksFrom(outbox.LaneStats{Records: 120, Oldest: now.Add(-20 * time.Minute)}, wire.TelemetryStatus{
		Wire: "v2", UnackedSent: 60, OldestUnackedSent: now.Add(-12 * time.Minute), LastAck: last, AcksApplied: 3, AcksIgnored: 1, AckedSamples: 900,
	}, now)
	want := wire.AcksStatus{Wire: "v2", UnackedSamples: 120, OldestUnackedAgeSeconds: 1200, UnackedSentSamples: 60, OldestUnackedSentAgeSeconds: 720, LastAck: last, AcksApplied: 3, AcksIgnored: 1, AckedSamples: 900}
	if a != want {
		t.Fatalf("AcksFrom = %+v; want %+v", a, want)
	}
}
