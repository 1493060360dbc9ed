package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/internal/latency"
)

// Real-time load of the kill phase: 50 Hz in frames of 100 ms.
const (
	killFramePeriod   = 100 * time.Millisecond
	killSamplesPerFrm = 5
)

// killPlan is the schedule every subject goes through, drawn once.
type killPlan struct {
	Warmup time.Duration   // cloud up, no kills: the latency window
	Runs   []time.Duration // how long each process lives before its SIGKILL
	UpAt   int             // the cloud broker comes back before run UpAt
}

func newKillPlan(seed uint64, kills int, warmup time.Duration) killPlan {
	rng := rand.New(rand.NewPCG(seed, 0xb0411e))
	p := killPlan{Warmup: warmup, UpAt: kills * 2 / 3}
	for range kills {
		p.Runs = append(p.Runs, time.Duration(200+rng.IntN(700))*time.Millisecond)
	}
	return p
}

// Outage is how long the cloud broker is down.
func (p killPlan) Outage() time.Duration {
	var d time.Duration
	for _, r := range p.Runs[:p.UpAt] {
		d += r
	}
	return d
}

// killResult is one subject through the plan.
type killResult struct {
	Subject   string          `json:"subject"`
	Kills     int             `json:"kills"`
	OutageS   float64         `json:"cloud_outage_s"`
	tally                     // pushed, acked, at cloud, lost
	LostPct   float64         `json:"lost_pct_of_acked"`
	Dups      int             `json:"duplicate_sample_deliveries"`
	LatencyMS latency.Summary `json:"publish_to_cloud_ms"`
	DropLogs  int             `json:"mosquitto_drop_log_lines,omitempty"`
}

// runKill streams 50 Hz x bowls in real time through s while the plan
// kills and restarts it and the cloud broker goes down and up; then lets
// it drain and counts.
func runKill(ctx context.Context, s subject, c *cloud, bowls int, plan killPlan, settle time.Duration) (killResult, error) {
	res := killResult{Subject: s.Name(), Kills: len(plan.Runs), OutageS: plan.Outage().Seconds()}
	if err := s.Start(ctx); err != nil {
		return res, err
	}
	if err := waitFor(ctx, 30*time.Second, s.Name()+" to connect to the cloud broker", func() bool { return c.Connects() > 0 }); err != nil {
		return res, err
	}
	sctx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	var wg sync.WaitGroup
	errs := make(chan error, bowls)
	logs := s.Source().Logs()
	for b := range bowls {
		wg.Go(func() {
			if err := stream(sctx, s.Source(), logs, b, killSamplesPerFrm, killFramePeriod, 0); err != nil {
				errs <- err
			}
		})
	}
	time.Sleep(time.Second) // links up (the bridge waits for a Hello), publishers connected
	warmFrom := time.Now()
	time.Sleep(plan.Warmup)
	warmTo := time.Now()
	// Frames of the window's last moments are still on their way; give
	// them time so the latency is not the outage's.
	time.Sleep(500 * time.Millisecond)
	c.Down()
	connects := 0
	for i, d := range plan.Runs {
		if i == plan.UpAt {
			if err := c.Up(); err != nil {
				return res, err
			}
		}
		time.Sleep(d)
		s.Kill()
		connects = c.Connects()
		if err := s.Start(ctx); err != nil {
			return res, fmt.Errorf("restart %d: %w", i+1, err)
		}
	}
	if err := c.Up(); err != nil {
		return res, err
	}
	// Only a connected last process can deliver what it holds; a bridge
	// reconnects after its restart_timeout.
	if err := waitFor(ctx, 60*time.Second, s.Name()+" to reconnect to the cloud broker", func() bool { return c.Connects() > connects }); err != nil {
		return res, err
	}
	time.Sleep(time.Second) // the last process lives and takes a little more
	stopStreams()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return res, err
	}
	if err := waitFor(ctx, 60*time.Second, s.Name()+" to acknowledge every frame", func() bool { return s.Source().Pending() == 0 }); err != nil {
		return res, err
	}
	t := count(s.Source().Logs(), c)
	if _, _, err := waitArrivals(ctx, c, t.Acked, settle, 90*time.Second); err != nil {
		return res, err
	}
	res.tally = count(s.Source().Logs(), c)
	if res.Acked > 0 {
		res.LostPct = 100 * float64(res.Lost) / float64(res.Acked)
	}
	cc := c.Counts()
	res.Dups = cc.Samples - cc.Distinct
	res.LatencyMS = latency.Summarize(latencies(s.Source().Logs(), c, warmFrom, warmTo))
	if ms, ok := s.(*mosquittoSubject); ok {
		res.DropLogs = ms.Drops()
	}
	return res, nil
}
