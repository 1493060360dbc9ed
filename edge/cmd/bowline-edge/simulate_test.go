package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/firmware-bridge/transport"
)

// TestSimulateOverUnixSocket runs `simulate` for ten simulated minutes as
// fast as possible on a unix socket, with a real bridge dialling it: every
// reading arrives in order, one weight batch per simulated second, and the
// truth file holds valid ground-truth lines.
func TestSimulateOverUnixSocket(t *testing.T) {
	dir := t.TempDir()
	truthPath := filepath.Join(dir, "truth.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard only
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runSimulate(ctx, []string{"--transport", "unix", "--dir", dir, "--speed", "0", "--duration", "10m",
			"--rate", "10", "--truth", truthPath, "--json", "--fault", "5m:load_cell:hx711 timeout"})
	}()

	var mu sync.Mutex
	var recs []bridge.Record
	br, err := bridge.New(bridge.Config{Logger: discardLogger(), Sink: bridge.SinkFunc(func(_ context.Context, b []bridge.Record) error {
		mu.Lock()
		recs = append(recs, b...)
		mu.Unlock()
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "bowl-000.sock")
	brCtx, stopBridge := context.WithCancel(ctx)
	brDone := make(chan struct{})
	go func() {
		defer close(brDone)
		for brCtx.Err() == nil {
			c, err := transport.DialUnix(brCtx, sock)
			if err != nil {
				time.Sleep(10 * time.Millisecond) // the simulator is still starting
				continue
			}
			br.Run(brCtx, c)
		}
	}()
	if err := <-done; err != nil {
		t.Fatalf("simulate: %v", err)
	}
	stopBridge()
	<-brDone

	var weights, faults int
	for i, r := range recs {
		if r.Seq != uint32(i) || r.Device != "bowl-000" {
			t.Fatalf("record %d = %s/%d; want bowl-000/%d", i, r.Device, r.Seq, i)
		}
		switch b := r.Body.(type) {
		case frame.WeightBatch:
			weights++
		case frame.Fault:
			faults++
			if b.Code != frame.FaultLoadCell || b.Detail != "hx711 timeout" {
				t.Errorf("fault %+v; want load cell, hx711 timeout", b)
			}
		}
	}
	if weights != 600 || faults != 1 {
		t.Fatalf("%d weight batches and %d faults; want 600 (one per simulated second) and 1", weights, faults)
	}
	f, err := os.Open(truthPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var kinds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var tr sim.Truth
		if err := json.Unmarshal(sc.Bytes(), &tr); err != nil || tr.Device != "bowl-000" {
			t.Fatalf("truth line %q: %+v, %v", sc.Text(), tr, err)
		}
		kinds = append(kinds, tr.Kind)
	}
	if len(kinds) == 0 || kinds[len(kinds)-1] == "" {
		t.Fatalf("truth kinds %v; want at least the fault", kinds)
	}
}
