package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/firmware-bridge/transport"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// bowl is one simulated bowl: an MCU model serving a unix socket the agent
// dials, fed by a 50 Hz load cell whose every sample has a unique value
// (milligrams = sample number), so the broker side can tell exactly which
// samples arrived.
type bowl struct {
	id     string
	sock   string
	mcu    *sim.MCU
	mu     sync.Mutex
	pushed int32 // samples handed to the MCU and accepted (numbered)
}

const samplesPerFrame = 5 // 50 Hz in frames of 100 ms

func startBowl(t *testing.T, ctx context.Context, wg *sync.WaitGroup, dir string, i int) *bowl {
	t.Helper()
	b := &bowl{id: fmt.Sprintf("bowl-%d", i), sock: filepath.Join(dir, fmt.Sprintf("b%d.sock", i))}
	mcu, err := sim.NewMCU(sim.MCUConfig{DeviceID: b.id, RingSize: 128, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	b.mcu = mcu
	ln, err := transport.ListenUnix(b.sock)
	if err != nil {
		t.Fatal(err)
	}
	context.AfterFunc(ctx, func() { ln.Close() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = mcu.Run(ctx, conn) // returns when the agent dies
			conn.Close()
		}
	})
	return b
}

// stream pushes 50 Hz samples until ctx ends; Push waits while the ring is
// full, as the firmware holds readings while the gateway is down.
func (b *bowl) stream(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for frameNo := uint32(0); ; frameNo++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b.mu.Lock()
		first := b.pushed
		b.mu.Unlock()
		mg := make([]int32, samplesPerFrame)
		for j := range mg {
			mg[j] = first + int32(j) + 1
		}
		if err := b.mcu.Push(ctx, frameNo*100, frame.WeightBatch{RateHz: 50, Milligrams: mg}); err != nil {
			return
		}
		b.mu.Lock()
		b.pushed += samplesPerFrame
		b.mu.Unlock()
	}
}

func (b *bowl) total() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int(b.pushed)
}

// received returns the distinct sample numbers per thing at the broker, and
// fails on two telemetry messages with one (thing, seq) but different
// samples: a duplicate the cloud could not drop. Their sent_at may differ
// (a redelivery is encoded again; docs/clock.md), so it is left out.
func received(t *testing.T, msgs []mqttbroker.Message) map[string]map[int]bool {
	t.Helper()
	got := map[string]map[int]bool{}
	bySeq := map[string]string{}
	for _, m := range msgs {
		if !strings.HasSuffix(m.Topic, "/telemetry") {
			continue
		}
		var tm wire.TelemetryMessage
		if err := json.Unmarshal(m.Payload, &tm); err != nil {
			t.Fatalf("telemetry payload %s: %v", m.Payload, err)
		}
		// Unmapped bowls publish as "<gateway>:<device id>".
		tm.Thing = strings.TrimPrefix(tm.Thing, "gw-1:")
		key := fmt.Sprintf("%s/%d", tm.Thing, tm.Seq)
		sent := tm.SentAt
		tm.SentAt = time.Time{}
		same, err := json.Marshal(tm)
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := bySeq[key]; ok && prev != string(same) {
			t.Fatalf("two messages with (thing, seq) = %s differ beyond sent_at:\n%s\n%s", key, prev, same)
		}
		if sent.IsZero() {
			t.Fatalf("telemetry %s has no sent_at", key)
		}
		bySeq[key] = string(same)
		if got[tm.Thing] == nil {
			got[tm.Thing] = map[int]bool{}
		}
		for _, s := range tm.Samples {
			got[tm.Thing][int(s.Value*1000+0.5)] = true
		}
	}
	return got
}

// TestKillLoopLosesNothing streams 4 bowls at 50 Hz while the agent
// process is SIGKILLed 20 times at random moments. Afterwards every sample
// the MCUs numbered (and so every sample they saw acknowledged) is at the
// broker, and the only duplicates are whole messages repeated with the same
// (thing, seq).
func TestKillLoopLosesNothing(t *testing.T) {
	testkit.Long(t, "crash loop skipped in -short mode")
	dir := t.TempDir()
	rec := new(mqttbroker.Recorder)
	broker, err := mqttbroker.Start(mqttbroker.Config{Hooks: []mqtt.Hook{rec}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var bowls []*bowl
	for i := range 4 {
		bowls = append(bowls, startBowl(t, ctx, &wg, dir, i))
	}
	streamCtx, stopStream := context.WithCancel(ctx)
	var streams sync.WaitGroup
	for _, b := range bowls {
		streams.Go(func() { b.stream(streamCtx) })
	}
	args := []string{"run", "--tenant", "t1", "--gateway", "gw-1", "--broker", broker.URL(),
		"--outbox", filepath.Join(dir, "outbox.db"), "--status-addr", "off", "--log-level", "warn",
		"--mqtt-backoff-min", "20ms", "--mqtt-backoff-max", "100ms", "--mqtt-rate", "1000",
		"--telemetry-wire", "v1"} // this test reads v1 messages
	for _, b := range bowls {
		args = append(args, "--input", "unix:"+b.sock)
	}
	logf, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	start := func() *testkit.Child {
		cmd := agentCmd(args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		return testkit.StartChild(t, "agent", cmd)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	const kills = 20
	for i := range kills {
		cmd := start()
		time.Sleep(time.Duration(150+rng.IntN(450)) * time.Millisecond)
		if err := cmd.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		_ = cmd.Wait(testkit.Context(t))
		t.Logf("kill %d: %d messages at the broker so far", i+1, len(rec.Messages()))
	}
	// The last agent lives; the bowls stream a little longer, then stop.
	statusAddr := freeAddr(t)
	args = append(args, "--status-addr", statusAddr)
	final := start()
	t.Cleanup(func() { _ = final.Stop(syscall.SIGTERM, time.Minute) })
	time.Sleep(time.Second)
	stopStream()
	streams.Wait()

	want := map[string]int{}
	for _, b := range bowls {
		want[b.id] = b.total()
	}
	var msgs []mqttbroker.Message
	testkit.WaitFor(t, "every numbered sample", 90*time.Second, func() bool {
		msgs = rec.Messages()
		got := received(t, msgs)
		for id, n := range want {
			if len(got[id]) < n {
				return false
			}
		}
		return true
	})
	got := received(t, msgs)
	for _, b := range bowls {
		st := b.mcu.Stats()
		for s := 1; s <= want[b.id]; s++ {
			if !got[b.id][s] {
				t.Fatalf("%s sample %d (of %d, MCU acked through seq %d) never reached the broker", b.id, s, want[b.id], st.AckedThrough)
			}
		}
		t.Logf("%s: %d samples, MCU retransmitted %d frames, acked through %d", b.id, want[b.id], st.Retransmitted, st.AckedThrough)
	}
	t.Logf("%d messages at the broker after %d kills", len(msgs), kills)

	// The final agent's status endpoint shows the drained outbox.
	rep := waitStatus(t, statusAddr, func(r wire.GatewayStatus) bool {
		return r.MQTT.Connected && r.Lanes.Telemetry.Backlog == 0 && r.Lanes.Events.Backlog == 0
	})
	if rep.Tenant != "t1" || rep.Disk.FileBytes == 0 || rep.MQTT.LastPuback.IsZero() {
		t.Fatalf("/status = %+v; want tenant t1, a file size and a last PUBACK", rep)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitStatus polls GET /status until cond holds; the deadline is a hang
// guard.
func waitStatus(t *testing.T, addr string, cond func(wire.GatewayStatus) bool) wire.GatewayStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last wire.GatewayStatus
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/status")
		if err == nil {
			var r wire.GatewayStatus
			err = json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if err == nil {
				last = r
				if cond(r) {
					return r
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET /status on %s never satisfied the condition; last %+v", addr, last)
	return last
}
