package main

import (
	"context"
	"os"
	"sync"
	"time"
)

// samplesPerBurstFrame is the samples per frame at full speed: one
// 50-sample weight batch, a second of a 50 Hz load cell.
const samplesPerBurstFrame = 50

// liveResult is one subject at full speed with the cloud broker up.
type liveResult struct {
	Subject       string  `json:"subject"`
	Samples       int     `json:"samples"`
	AckedPerSec   float64 `json:"acked_samples_per_s"`
	CloudPerSec   float64 `json:"cloud_samples_per_s"`
	AtCloud       int     `json:"at_cloud"`
	Lost          int     `json:"lost"`
	PeakMemory    memory  `json:"peak_memory"`
	CloudMessages int     `json:"cloud_messages"`
}

// pushAll streams total samples per subject at full speed from each bowl.
func pushAll(ctx context.Context, src source, bowls, total int) error {
	var wg sync.WaitGroup
	errs := make(chan error, bowls)
	logs := src.Logs()
	for b := range bowls {
		wg.Go(func() {
			if err := stream(ctx, src, logs, b, samplesPerBurstFrame, 0, total/bowls); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// runLive measures samples/s acknowledged to the source and samples/s at
// the cloud broker, the broker up throughout.
func runLive(ctx context.Context, s subject, c *cloud, bowls, total int, settle time.Duration) (liveResult, error) {
	res := liveResult{Subject: s.Name(), Samples: total}
	if err := s.Start(ctx); err != nil {
		return res, err
	}
	if err := waitFor(ctx, 30*time.Second, s.Name()+" to connect to the cloud broker", func() bool { return c.Connects() > 0 }); err != nil {
		return res, err
	}
	mem := sampleMemory(s.Pid)
	start := time.Now()
	if err := pushAll(ctx, s.Source(), bowls, total); err != nil {
		mem.Peak()
		return res, err
	}
	if err := waitFor(ctx, 120*time.Second, s.Name()+" to acknowledge every frame", func() bool { return s.Source().Pending() == 0 }); err != nil {
		mem.Peak()
		return res, err
	}
	acked := time.Since(start)
	_, lastAt, err := waitArrivals(ctx, c, total, settle, 120*time.Second)
	res.PeakMemory = mem.Peak()
	if err != nil {
		return res, err
	}
	t := count(s.Source().Logs(), c)
	res.AtCloud, res.Lost = t.AtCloud, t.Lost
	res.AckedPerSec = float64(t.Acked) / acked.Seconds()
	res.CloudPerSec = float64(t.AtCloud) / lastAt.Sub(start).Seconds()
	res.CloudMessages = c.Counts().Messages
	return res, nil
}

// backlogResult is one subject filled with the cloud broker down, then
// drained.
type backlogResult struct {
	Subject     string  `json:"subject"`
	Samples     int     `json:"samples"`
	FillPerSec  float64 `json:"fill_acked_samples_per_s"`
	WithBacklog memory  `json:"memory_with_backlog"`
	DrainPeak   memory  `json:"memory_peak_while_draining"`
	// ReconnectS is from the broker's return to the first sample of the
	// backlog at it; DrainPerSec counts from that first sample on.
	ReconnectS  float64 `json:"reconnect_s"`
	DrainPerSec float64 `json:"drain_samples_per_s"`
	AtCloud     int     `json:"at_cloud"`
	Lost        int     `json:"lost"`
	FileBytes   int64   `json:"file_bytes,omitempty"`
	// GoMemory is the agent's runtime view at the same moment as
	// WithBacklog (agent only).
	GoMemory *goMemory `json:"go_memory_with_backlog,omitempty"`
	DropLogs int       `json:"mosquitto_drop_log_lines,omitempty"`
}

// runBacklog fills s with total samples while the cloud broker is down,
// reads the process's memory holding them, then brings the broker up and
// measures the drain.
func runBacklog(ctx context.Context, s subject, c *cloud, bowls, total int, settle time.Duration) (backlogResult, error) {
	res := backlogResult{Subject: s.Name(), Samples: total}
	c.Down()
	if err := s.Start(ctx); err != nil {
		return res, err
	}
	start := time.Now()
	if err := pushAll(ctx, s.Source(), bowls, total); err != nil {
		return res, err
	}
	if err := waitFor(ctx, 300*time.Second, s.Name()+" to acknowledge the backlog", func() bool { return s.Source().Pending() == 0 }); err != nil {
		return res, err
	}
	res.FillPerSec = float64(total) / time.Since(start).Seconds()
	if a, ok := s.(*agentSubject); ok {
		if fi, err := os.Stat(a.OutboxPath()); err == nil {
			res.FileBytes = fi.Size()
		}
	}
	time.Sleep(time.Second) // let the process settle (GC, writer idle)
	m, err := readMemory(s.Pid())
	if err != nil {
		return res, err
	}
	res.WithBacklog = m
	if a, ok := s.(*agentSubject); ok {
		g, err := scrapeGoMemory(ctx, a.MetricsURL())
		if err != nil {
			return res, err
		}
		res.GoMemory = &g
	}
	mem := sampleMemory(s.Pid)
	connects := c.Connects()
	if err := c.Up(); err != nil {
		mem.Peak()
		return res, err
	}
	start = time.Now()
	if err := waitFor(ctx, 60*time.Second, s.Name()+" to reconnect to the cloud broker", func() bool { return c.Connects() > connects }); err != nil {
		mem.Peak()
		return res, err
	}
	firstAt, lastAt, err := waitArrivals(ctx, c, total, settle, 300*time.Second)
	res.DrainPeak = mem.Peak()
	if err != nil {
		return res, err
	}
	t := count(s.Source().Logs(), c)
	res.AtCloud, res.Lost = t.AtCloud, t.Lost
	if !firstAt.IsZero() {
		res.ReconnectS = firstAt.Sub(start).Seconds()
		if d := lastAt.Sub(firstAt).Seconds(); d > 0 {
			res.DrainPerSec = float64(t.AtCloud) / d
		}
	}
	if ms, ok := s.(*mosquittoSubject); ok {
		res.DropLogs = ms.Drops()
	}
	return res, nil
}
