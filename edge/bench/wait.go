package main

import (
	"context"
	"fmt"
	"time"
)

// poll is how often the harness looks at counters. Waits use generous
// guards only to stop a hung run; nothing is timed by them.
const poll = 20 * time.Millisecond

// waitFor polls cond until it holds, ctx ends or guard passes.
func waitFor(ctx context.Context, guard time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %s", guard, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
	return nil
}

// waitArrivals waits until want distinct samples are at the cloud, or the
// count stopped moving for settle (a subject that lost some), or guard
// passes. It returns when the first and the last new sample arrived (as
// seen by polling; zero first when none did).
func waitArrivals(ctx context.Context, c *cloud, want int, settle, guard time.Duration) (first, last time.Time, err error) {
	deadline := time.Now().Add(guard)
	n, lastAt := c.Distinct(), time.Now()
	for n < want {
		if time.Since(lastAt) > settle {
			return first, lastAt, nil
		}
		if time.Now().After(deadline) {
			return first, lastAt, fmt.Errorf("waited %s for %d samples at the cloud broker; have %d", guard, want, n)
		}
		select {
		case <-ctx.Done():
			return first, lastAt, ctx.Err()
		case <-time.After(poll):
		}
		if m := c.Distinct(); m != n {
			n, lastAt = m, time.Now()
			if first.IsZero() {
				first = lastAt
			}
		}
	}
	return first, lastAt, nil
}

// sampler records the field-wise peak of a process's memory until stopped.
type sampler struct {
	stop chan struct{}
	done chan memory
}

func sampleMemory(pid func() int) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan memory, 1)}
	go func() {
		var peak memory
		for {
			if m, err := readMemory(pid()); err == nil {
				peak = maxMemory(peak, m)
			}
			select {
			case <-s.stop:
				s.done <- peak
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *sampler) Peak() memory {
	close(s.stop)
	return <-s.done
}
