package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/testkit"
)

const v2Rule = "bowline_test_telemetry"

// v2Cloud stands in for the stream's consumer: it reads the batches the
// broker accepted, checks that a (thing, outbox, seq) always carries the
// same sample, and acknowledges what it has seen.
type v2Cloud struct {
	t      *testing.T
	rec    *mqttbroker.Recorder
	broker *mqttbroker.Broker

	mu      sync.Mutex
	seen    int                        // messages of rec already read
	samples map[string]batch.Sample    // "<thing>/<outbox>/<seq>"
	got     map[string]map[int32]bool  // per bowl: milligram values = sample numbers
	seqs    map[string]map[uint64]bool // per thing: seqs seen
	outbox  string
}

func (c *v2Cloud) read() {
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs := c.rec.Messages()
	topic := wire.BasicIngestTopic(v2Rule, wire.Topic{Tenant: "t1", Thing: "gw-1", Kind: wire.KindBatch})
	for _, m := range msgs[c.seen:] {
		if strings.HasSuffix(m.Topic, "/telemetry") {
			c.t.Errorf("v2 gateway published v1 telemetry on %s", m.Topic)
		}
		if m.Topic != topic {
			continue
		}
		b, err := batch.Decode(m.Payload)
		if err != nil {
			c.t.Errorf("batch: %v", err)
			continue
		}
		if c.outbox == "" {
			c.outbox = b.Outbox
		} else if b.Outbox != c.outbox {
			c.t.Errorf("batch of outbox %s after %s; want one outbox file over every kill", b.Outbox, c.outbox)
		}
		for _, s := range b.Things {
			bowl := strings.TrimPrefix(s.Thing, "gw-1:")
			if c.got[bowl] == nil {
				c.got[bowl], c.seqs[s.Thing] = map[int32]bool{}, map[uint64]bool{}
			}
			for _, x := range s.Samples {
				key := fmt.Sprintf("%s/%s/%d", s.Thing, b.Outbox, x.Seq)
				if prev, ok := c.samples[key]; ok && prev != x {
					c.t.Errorf("%s carried %+v, then %+v; want a seq to name one sample", key, prev, x)
				}
				c.samples[key] = x
				if x.Scale != 3 {
					c.t.Errorf("%s scale %d; want 3 (milligrams)", key, x.Scale)
				}
				c.got[bowl][int32(x.Value)] = true
				c.seqs[s.Thing][x.Seq] = true
			}
		}
	}
	c.seen = len(msgs)
}

// ack publishes an ack of every seq seen so far.
func (c *v2Cloud) ack() {
	c.read()
	c.mu.Lock()
	if c.outbox == "" {
		c.mu.Unlock()
		return
	}
	m := wire.AckMessage{Outbox: c.outbox, Things: map[string][]wire.Range{}, At: time.Now()}
	for thing, set := range c.seqs {
		seqs := make([]uint64, 0, len(set))
		for s := range set {
			seqs = append(seqs, s)
		}
		slices.Sort(seqs)
		var rs []wire.Range
		for _, s := range seqs {
			if n := len(rs); n > 0 && rs[n-1].Last+1 == s {
				rs[n-1].Last = s
				continue
			}
			rs = append(rs, wire.Range{First: s, Last: s})
		}
		m.Things[thing] = rs
	}
	c.mu.Unlock()
	p, err := wire.EncodeAck(m)
	if err != nil {
		c.t.Errorf("encode ack: %v", err)
		return
	}
	_ = c.broker.Server().Publish(wire.AckTopic("t1", "gw-1"), p, false, 1)
}

func (c *v2Cloud) has(bowl string, n int) bool {
	c.read()
	c.mu.Lock()
	defer c.mu.Unlock()
	for s := 1; s <= n; s++ {
		if !c.got[bowl][int32(s)] {
			return false
		}
	}
	return true
}

// TestKillLoopLosesNothingV2 is the kill loop with wire v2: 4 bowls at
// 50 Hz, the agent SIGKILLed 10 times at random moments, a cloud stand-in
// that acknowledges what it received every half second (and so misses the
// acks of every agent it outlives). Every numbered sample reaches the
// broker in a batch, a (thing, outbox, seq) never names two samples, and
// once acknowledged the outbox drains.
func TestKillLoopLosesNothingV2(t *testing.T) {
	testkit.Long(t, "crash loop skipped in -short mode")
	dir := t.TempDir()
	rec := new(mqttbroker.Recorder)
	broker, err := mqttbroker.Start(mqttbroker.Config{Hooks: []mqtt.Hook{rec}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	cloud := &v2Cloud{t: t, rec: rec, broker: broker, samples: map[string]batch.Sample{}, got: map[string]map[int32]bool{}, seqs: map[string]map[uint64]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				cloud.ack()
			}
		}
	})
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
		"--telemetry-rule", v2Rule, "--telemetry-batch-interval", "200ms", "--telemetry-ack-timeout", "3s"}
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
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	const kills = 10
	for i := range kills {
		cmd := start()
		time.Sleep(time.Duration(200+rng.IntN(600)) * time.Millisecond)
		if err := cmd.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		_ = cmd.Wait(testkit.Context(t))
	}
	statusAddr := freeAddr(t)
	args = append(args, "--status-addr", statusAddr)
	final := start()
	t.Cleanup(func() { _ = final.Stop(syscall.SIGTERM, time.Minute) })
	time.Sleep(time.Second)
	stopStream()
	streams.Wait()

	testkit.WaitFor(t, "every numbered sample in a batch", 90*time.Second, func() bool {
		for _, b := range bowls {
			if !cloud.has(b.id, b.total()) {
				return false
			}
		}
		return true
	})
	for _, b := range bowls {
		t.Logf("%s: %d samples, MCU acked through %d", b.id, b.total(), b.mcu.Stats().AckedThrough)
	}
	rep := waitStatus(t, statusAddr, func(r wire.GatewayStatus) bool {
		return r.Lanes.Telemetry.Backlog == 0 && r.Lanes.Events.Backlog == 0 && r.Acks.AcksApplied > 0
	})
	cloud.read()
	t.Logf("%d messages at the broker after %d kills; final agent: %d acks applied, %d samples removed by them", len(rec.Messages()), kills, rep.Acks.AcksApplied, rep.Acks.AckedSamples)
}
