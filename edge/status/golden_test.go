package status

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
)

var update = flag.Bool("update", false, "rewrite edge/wire/testdata/status.json from this package's report code")

// goldenStatus is the golden document's path: edge/wire's testdata, which
// the cloud console's tests decode (cloud/console TestAgentStatusGolden).
var goldenStatus = filepath.Join("..", "wire", "testdata", "status.json")

// TestStatusDocumentGolden serves a report built by this package's real
// code (LaneFrom, DiskFrom, AcksFrom, the server's redaction) and checks
// /status answers exactly edge/wire/testdata/status.json, the document
// the console's tests decode: a change to either side's reading of the
// document shows as a diff of that file.
func TestStatusDocumentGolden(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	st := outbox.Stats{
		Events:    outbox.LaneStats{Records: 2, Bytes: 812, Oldest: now.Add(-90 * time.Second), Dropped: 1},
		Telemetry: outbox.LaneStats{Records: 120, Bytes: 48000, Oldest: now.Add(-20 * time.Minute), Dropped: 7},
		FileBytes: 4 << 20, FreeBytes: 65536, MaxBytes: 256 << 20,
		Budget: outbox.Budget{FSFreeBytes: 1 << 30, EffectiveMaxBytes: 256 << 20},
	}
	mqtt := wire.MQTTStatus{Connected: true, Broker: "ssl://gw-1:hunter2@broker.example:8883/?token=abc", LastPuback: now.Add(-2 * time.Second),
		Connects: 3, InFlight: 2, Published: 12345, Acked: 12343, PubackTimeouts: 1,
		Telemetry: wire.TelemetryStatus{Wire: "v2", UnackedSent: 60, OldestUnackedSent: now.Add(-12 * time.Minute), Batches: 40, BatchBytes: 51200,
			BatchSamples: 2400, LastAck: now.Add(-time.Minute), AcksApplied: 38, AcksIgnored: 1, AckedSamples: 2340}}
	rep := wire.GatewayStatus{Tenant: "t1", Gateway: "gw-1", Uptime: 90 * time.Minute,
		Lanes: wire.LanesStatus{Events: LaneFrom(st.Events, now), Telemetry: LaneFrom(st.Telemetry, now)},
		Disk:  DiskFrom("/var/lib/bowline/outbox.db", st),
		MQTT:  mqtt,
		Acks:  AcksFrom(st.Telemetry, mqtt.Telemetry, now),
		Bowls: []wire.BowlStatus{
			{Input: "unix:/run/bowline/bowl.sock", Connected: true},
			{Device: "bowl-7f3a", Connected: true, LastSeen: now.Add(-3 * time.Second)},
			{Input: "serial:/dev/ttyAMA0", LastError: "open /dev/ttyAMA0: no such file or directory"},
		}}
	s, err := Listen(Config{Addr: "127.0.0.1:0", Gatherer: prometheus.NewRegistry(), Report: func(context.Context) (wire.GatewayStatus, error) { return rep, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	code, body := get(t, "http://"+s.Addr()+"/status")
	if code != 200 {
		t.Fatalf("/status = %d %s; want 200", code, body)
	}
	if *update {
		if err := os.WriteFile(goldenStatus, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenStatus)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(body), want) {
		t.Errorf("/status served\n%s\nwant %s (go test ./edge/status -run TestStatusDocumentGolden -update rewrites it; review the diff: the console reads it)", body, goldenStatus)
	}
}
