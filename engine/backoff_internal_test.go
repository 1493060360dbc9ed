package engine

import (
	"context"
	"testing"
	"time"
)

// TestBackoffEndsOnceNoMemberWaits: the committer's wait between attempts
// outlasts a member whose context ended, but not the last one: with nobody
// left to answer, it returns at once instead of sleeping on.
func TestBackoffEndsOnceNoMemberWaits(t *testing.T) {
	e := &Engine{cfg: Config{BackoffBase: time.Hour, BackoffMax: time.Hour}}
	ctx1, cancel1 := context.WithCancel(t.Context())
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	group := []*request{{ctx: ctx1}, {ctx: ctx2}}
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.backoff(group, &n)
	}()

	cancel1()
	select {
	case <-done:
		t.Fatal("backoff returned with a member still waiting; want it to keep waiting")
	case <-time.After(50 * time.Millisecond):
	}
	cancel2()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("backoff still waiting 10s after every member's context ended; want it to return promptly")
	}
	if n != 1 {
		t.Errorf("backoffs = %d after one wait; want 1", n)
	}
}
