package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/status"

	"github.com/bowline-iot/bowline/edge/wire"
)

func TestStatusCommand(t *testing.T) {
	rep := wire.GatewayStatus{Tenant: "t1", Gateway: "gw-1", Uptime: 90 * time.Minute,
		Lanes: wire.LanesStatus{Events: wire.LaneStatus{Backlog: 3, Bytes: 1536, OldestAgeSeconds: 60}},
		Disk: wire.DiskStatus{Path: "/data/outbox.db", FileBytes: 3 << 20, FileFreeBytes: 4096, FSFreeBytes: 5 << 30,
			CapBytes: 256 << 20, EffectiveMaxBytes: 256 << 20},
		MQTT:  wire.MQTTStatus{Connected: true, Broker: "tcp://127.0.0.1:1883", Published: 42, Acked: 40, InFlight: 2, Connects: 1},
		Bowls: []wire.BowlStatus{{Input: "unix:/run/bowl.sock", Device: "bowl-1", Connected: true}},
	}
	srv, err := status.Listen(status.Config{Addr: "127.0.0.1:0", Logger: discardLogger(),
		Report: func(context.Context) (wire.GatewayStatus, error) { return rep, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	code, out := runAgent(t, "status", "--addr", srv.Addr())
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	for _, want := range []string{"gateway gw-1 (tenant t1), up 1h30m0s", "connected to tcp://127.0.0.1:1883", "3 waiting (1.5 KiB), oldest 1m0s old",
		"outbox /data/outbox.db is 3.0 MiB (4.0 KiB of it free pages); file system 5.0 GiB free", "bowl-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("status printed\n%s\nwant %q", out, want)
		}
	}

	code, out = runAgent(t, "status", "--addr", srv.Addr(), "--json")
	var got wire.GatewayStatus
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Disk.FSFreeBytes != 5<<30 || got.Gateway != "gw-1" {
		t.Fatalf("status --json: exit %d, %v\n%s\nwant the document", code, err, out)
	}

	cancel()
	<-done
	done <- nil // for the cleanup
	code, out = runAgent(t, "status", "--addr", srv.Addr())
	if code != 1 || !strings.Contains(out, srv.Addr()) {
		t.Errorf("status with the agent gone: exit %d\n%s\nwant 1 naming the address", code, out)
	}
	if code, out = runAgent(t, "status", "--timeout", "0s"); code != 2 {
		t.Errorf("status --timeout 0s: exit %d\n%s\nwant 2", code, out)
	}
}
