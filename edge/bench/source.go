package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A source feeds one subject (the agent or mosquitto) with the bowls'
// weight frames and knows which of them the subject acknowledged: the MCU
// model's cumulative ack for the agent, the PUBACK for mosquitto.
type source interface {
	// Push hands bowl b's next frame of samples to the subject, waiting
	// while the input is full (a firmware ring, a publish window).
	Push(ctx context.Context, b int, mg []int32) error
	// Pending counts frames pushed but not yet acknowledged.
	Pending() int
	// Logs returns the bowls' frame logs with Acked filled in.
	Logs() []*bowlLog
	// Close stops the source's goroutines.
	Close()
}

// frameRec is one frame a bowl produced: samples First..Last.
type frameRec struct {
	First, Last int32
	At          time.Time // when it was handed to the subject's input
	Acked       bool
}

// bowlLog is the frames of one bowl, indexed by frame number; sample
// numbers start at 1 and are the milligram values the bowl sends.
type bowlLog struct {
	Thing  string
	mu     sync.Mutex
	frames []frameRec
	next   int32
}

func newBowlLogs(n int) []*bowlLog {
	logs := make([]*bowlLog, n)
	for i := range logs {
		logs[i] = &bowlLog{Thing: fmt.Sprintf("bowl-%d", i), next: 1}
	}
	return logs
}

// nextFrame returns the next n sample values without recording them.
func (l *bowlLog) nextFrame(n int) []int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	mg := make([]int32, n)
	for i := range mg {
		mg[i] = l.next + int32(i)
	}
	return mg
}

// add records a frame handed to the subject and returns its number.
func (l *bowlLog) add(mg []int32, at time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.frames = append(l.frames, frameRec{First: mg[0], Last: mg[len(mg)-1], At: at})
	l.next = mg[len(mg)-1] + 1
	return len(l.frames) - 1
}

func (l *bowlLog) setAcked(i int) {
	l.mu.Lock()
	l.frames[i].Acked = true
	l.mu.Unlock()
}

// Frames returns a copy of the frames.
func (l *bowlLog) Frames() []frameRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]frameRec(nil), l.frames...)
}

// stream pushes frames of perFrame samples to src for bowl b: every period
// when period > 0 (real time), back to back otherwise, until ctx ends or
// limit samples (0: no limit) were pushed.
func stream(ctx context.Context, src source, logs []*bowlLog, b, perFrame int, period time.Duration, limit int) error {
	var tick *time.Ticker
	if period > 0 {
		tick = time.NewTicker(period)
		defer tick.Stop()
	}
	pushed := 0
	for limit == 0 || pushed < limit {
		if tick != nil {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
		n := perFrame
		if limit > 0 {
			n = min(n, limit-pushed)
		}
		if err := src.Push(ctx, b, logs[b].nextFrame(n)); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		pushed += n
	}
	return nil
}

// tally is what the subject acknowledged and what reached the cloud.
type tally struct {
	Pushed      int `json:"pushed"`       // samples handed to the subject
	Acked       int `json:"acked"`        // samples the source saw acknowledged
	AtCloud     int `json:"at_cloud"`     // distinct pushed samples at the cloud broker
	Lost        int `json:"lost"`         // acknowledged but never at the cloud
	UnackedLost int `json:"unacked_lost"` // never acknowledged and never at the cloud
}

func count(logs []*bowlLog, c *cloud) tally {
	var t tally
	for _, l := range logs {
		for _, f := range l.Frames() {
			for n := f.First; n <= f.Last; n++ {
				t.Pushed++
				at := !c.Arrival(l.Thing, n).IsZero()
				if at {
					t.AtCloud++
				}
				if f.Acked {
					t.Acked++
				}
				switch {
				case f.Acked && !at:
					t.Lost++
				case !f.Acked && !at:
					t.UnackedLost++
				}
			}
		}
	}
	return t
}

// latencies returns, for the frames handed over in [from, to), the time
// from hand-over to the first arrival of the frame's first sample at the
// cloud; frames that never arrived are left out.
func latencies(logs []*bowlLog, c *cloud, from, to time.Time) []time.Duration {
	var out []time.Duration
	for _, l := range logs {
		for _, f := range l.Frames() {
			if f.At.Before(from) || !f.At.Before(to) {
				continue
			}
			if a := c.Arrival(l.Thing, f.First); !a.IsZero() {
				out = append(out, a.Sub(f.At))
			}
		}
	}
	return out
}
