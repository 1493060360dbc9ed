// Package backoff spaces out retries: exponential delays with optional
// jitter, and a sleep that ends as soon as the caller's context does, so a
// retry loop never outlives the call it serves.
//
//	policy := backoff.Policy{Base: 50 * time.Millisecond, Max: 5 * time.Second, Jitter: 1}
//	for attempt := 0; ; attempt++ {
//		if err := try(ctx); err == nil {
//			return nil
//		}
//		if err := policy.Wait(ctx, attempt); err != nil {
//			return err // ctx ended
//		}
//	}
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy shapes the delays of a retry loop. Attempt n (from 0) has the
// ceiling d = min(Max, Base·2^n), and waits a random duration in
// [d - Jitter·d, d]. The zero Policy never waits.
type Policy struct {
	// Base is the ceiling of the first delay.
	Base time.Duration
	// Max caps every delay; zero means no cap.
	Max time.Duration
	// Jitter is the random fraction of each delay, in [0, 1]: 1 is "full
	// jitter" (anything up to the ceiling), 0.5 "equal jitter" (between half
	// and all of it), 0 exactly the ceiling. Jitter keeps many clients that
	// failed together from retrying in lockstep. Values outside [0, 1] are
	// clamped.
	Jitter float64
}

// Delay returns how long attempt (counted from 0) waits.
func (p Policy) Delay(attempt int) time.Duration {
	if p.Base <= 0 {
		return 0
	}
	ceiling := p.Base
	for range max(attempt, 0) {
		if (p.Max > 0 && ceiling >= p.Max) || ceiling > maxDuration/2 {
			break
		}
		ceiling *= 2
	}
	if p.Max > 0 && ceiling > p.Max {
		ceiling = p.Max
	}
	jitter := time.Duration(float64(ceiling) * min(max(p.Jitter, 0), 1))
	if jitter <= 0 {
		return ceiling
	}
	return ceiling - jitter + rand.N(jitter+1)
}

const maxDuration = time.Duration(1<<63 - 1)

// Wait sleeps Delay(attempt), or until ctx ends; see Sleep.
func (p Policy) Wait(ctx context.Context, attempt int) error {
	return Sleep(ctx, p.Delay(attempt))
}

// Sleep waits d. It returns nil once d has passed, or ctx.Err() as soon as
// ctx ends, whichever comes first; with ctx already ended it returns at
// once, even for d <= 0.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
