package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bowline-iot/bowline/edge/agent"
	"github.com/bowline-iot/bowline/edge/detect"
	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// durableResult is samples/s made durable in process for one delivery
// size.
type durableResult struct {
	RecordsPerDeliver int     `json:"records_per_deliver"`
	SamplesPerDeliver int     `json:"samples_per_deliver"`
	Samples           int     `json:"samples"`
	Seconds           float64 `json:"seconds"`
	SamplesPerSec     float64 `json:"samples_per_s"`
	Commits           int     `json:"commits"`
	DeliversPerCommit float64 `json:"delivers_per_commit"`
}

// measureDurable drives the agent's Sink (dedup, detection, one outbox
// transaction per Deliver, fsync on) from bowls goroutines, each
// delivering batches of recs 50-sample weight frames one after another as
// a bridge does, for about d.
func measureDurable(ctx context.Context, dir string, bowls, recs int, d time.Duration) (durableResult, error) {
	path := filepath.Join(dir, fmt.Sprintf("durable-%d.db", recs))
	commits := &commitCount{}
	o, err := outbox.Open(outbox.Config{Path: path, MaxBytes: 8 << 30, TelemetryTTL: -1, Logger: slog.New(slog.DiscardHandler), Observer: commits})
	if err != nil {
		return durableResult{}, fmt.Errorf("durable phase: %w", err)
	}
	defer o.Close()
	sink, err := agent.NewSink(o, nil, detect.Config{})
	if err != nil {
		return durableResult{}, fmt.Errorf("durable phase: %w", err)
	}
	res := durableResult{RecordsPerDeliver: recs, SamplesPerDeliver: recs * frame.MaxSamples}
	var wg sync.WaitGroup
	errs := make(chan error, bowls)
	counts := make([]int, bowls)
	delivers := make([]int, bowls)
	start := time.Now()
	for b := range bowls {
		wg.Go(func() {
			dev := fmt.Sprintf("bowl-%d", b)
			rng := rand.New(rand.NewPCG(uint64(b), 7))
			seq := uint32(0)
			t := start
			for time.Since(start) < d {
				batch := make([]bridge.Record, recs)
				for i := range batch {
					mg := make([]int32, frame.MaxSamples)
					for j := range mg {
						mg[j] = 300_000 + int32(rng.NormFloat64()*400) // a bowl at 300 g, 0.4 g noise
					}
					batch[i] = bridge.Record{Device: dev, Seq: seq, Uptime: time.Duration(seq) * time.Second, At: t,
						Body: frame.WeightBatch{RateHz: 50, Milligrams: mg}}
					seq++
					t = t.Add(time.Second)
				}
				if err := sink.Deliver(ctx, batch); err != nil {
					errs <- fmt.Errorf("durable phase: deliver %s: %w", dev, err)
					return
				}
				counts[b] += recs * frame.MaxSamples
				delivers[b]++
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return res, err
	}
	n := 0
	for b := range bowls {
		res.Samples += counts[b]
		n += delivers[b]
	}
	res.Seconds = el.Seconds()
	res.SamplesPerSec = float64(res.Samples) / el.Seconds()
	res.Commits = int(commits.n.Load())
	if res.Commits > 0 {
		res.DeliversPerCommit = float64(n) / float64(res.Commits)
	}
	return res, nil
}

// commitCount counts the outbox's group commits.
type commitCount struct {
	outbox.NopObserver
	n atomic.Int64
}

func (c *commitCount) Committed(int, int, time.Duration) { c.n.Add(1) }
