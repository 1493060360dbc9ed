package testkit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Polling intervals of WaitFor: the first retry is quick, later ones back
// off so a condition that queries an emulator does not hammer it.
const (
	firstPoll = time.Millisecond
	maxPoll   = 100 * time.Millisecond
)

// WaitFor calls cond until it returns true. It fails the test, naming what
// it waited for, if timeout passes or the test's context ends first.
// timeout guards against a hang; it is not a performance bound, so make it
// generous.
//
// cond runs on the calling goroutine: at once, then at intervals growing
// from 1 ms to 100 ms. Call WaitFor from the test's goroutine (it may call
// t.Fatalf), and not from a t.Cleanup function, when t.Context() has
// already ended.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	poll := time.NewTimer(firstPoll)
	defer poll.Stop()
	for next := firstPoll; !cond(); next = min(2*next, maxPoll) {
		poll.Reset(next)
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Fatalf("timed out after %s waiting for %s", timeout, what)
			}
			t.Fatalf("test ended while waiting for %s: %v", what, ctx.Err())
		case <-poll.C:
		}
	}
}

// WaitProgress polls step every interval until it reports done. It fails
// the test only when step's progress count has not grown for stall (it may
// start anywhere, negative too: minus the work left counts down) or the
// test's context ends): a slow emulator on a loaded machine takes longer,
// a stuck pipeline fails. Use it where the amount of work, not a bug,
// decides how long a wait takes; what names the wait in the failure.
func WaitProgress(t testing.TB, what string, interval, stall time.Duration, step func() (done bool, progress int)) {
	t.Helper()
	last, lastAt, first := 0, time.Now(), true
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		done, n := step()
		if done {
			return
		}
		if first || n > last {
			last, lastAt, first = n, time.Now(), false
		} else if time.Since(lastAt) > stall {
			t.Fatalf("no progress for %s waiting for %s (stuck at %d)", stall, what, n)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended while waiting for %s: %v", what, t.Context().Err())
		case <-tick.C:
		}
	}
}
