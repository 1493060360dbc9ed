package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// TestFailingHeadRetriesInPlace: on the FIFO double (ten messages of a
// group per receive) a tenant's head event fails N times while nine wait
// behind it in the same receive. The head is retried in place, so every
// waiting event runs exactly once, in order, on its first receive, and
// none is dead: a failing head spends neither its own receives nor theirs.
// N is past the queue's maxReceiveCount, which is only a safety net now.
func TestFailingHeadRetriesInPlace(t *testing.T) {
	const (
		maxReceive = 3
		failures   = 4 // > maxReceive, < the attempt budget
		events     = 10
	)
	h := newDoubleHarness(t, 3*time.Second, maxReceive)
	var mu sync.Mutex
	var runs []uint64
	var lastDone time.Time
	headRuns := 0
	h.start([]engine.Subscription{durable("notify_owner", "bowl.*", func(_ context.Context, env engine.Envelope) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, env.Seq)
		lastDone = time.Now()
		if env.Seq == 1 && headRuns < failures {
			headRuns++
			return fmt.Errorf("push provider 503 (run %d)", headRuns)
		}
		return nil
	})}, func(c *Config) {
		c.MaxReceiveCount = maxReceive
		c.MaxAttempts = failures + 1
		c.RetryBackoffBase, c.RetryBackoffMax = 100*time.Millisecond, 400*time.Millisecond
	})
	var envs []engine.Envelope
	sent := time.Now()
	for seq := uint64(1); seq <= events; seq++ {
		env := enginetest.Envelope(t, h.tenant, "bowl.food_low", seq, nil)
		envs = append(envs, env)
		h.send(env)
	}
	h.waitFor("every message deleted", func() bool {
		for _, m := range h.double.Messages(h.q.URL) {
			if !m.Deleted {
				return false
			}
		}
		return len(h.double.Messages(h.q.DLQURL)) == 0
	})
	mu.Lock()
	got := fmt.Sprint(runs)
	mu.Unlock()
	want := "[1 1 1 1 1 2 3 4 5 6 7 8 9 10]"
	if got != want {
		t.Errorf("handler runs by seq = %s; want %s", got, want)
	}
	receives := 0
	for i, m := range h.double.Messages(h.q.URL) {
		receives += m.Receives
		if m.Receives != 1 {
			t.Errorf("event %d received %d times; want 1", i+1, m.Receives)
		}
	}
	mu.Lock()
	t.Logf("head failed %d times: last event done %v after the send; %.2f receives per event, %d ReceiveMessage calls",
		failures, lastDone.Sub(sent).Round(time.Millisecond), float64(receives)/events, h.double.Calls("ReceiveMessage"))
	mu.Unlock()
	if n := len(h.double.Messages(h.q.DLQURL)); n != 0 {
		t.Errorf("DLQ holds %d messages; want 0", n)
	}
	for i, env := range envs {
		r := h.row(env.ID, "notify_owner")
		wantAttempts := 1
		if i == 0 {
			wantAttempts = failures + 1
		}
		if r.Status != inbox.Completed || r.Attempts != wantAttempts {
			t.Errorf("event %d row = %s after %d attempts; want completed after %d", i+1, r.Status, r.Attempts, wantAttempts)
		}
	}
}

// TestAttemptBudgetFromInboxRow: a handler that always fails is dead after
// MaxAttempts attempts counted on its inbox row, all within one receive,
// and its dead letter says so; the message then goes to the DLQ with it.
func TestAttemptBudgetFromInboxRow(t *testing.T) {
	const attempts = 4
	h := newDoubleHarness(t, 3*time.Second, 10)
	var c calls
	h.start([]engine.Subscription{durable("notify_owner", "bowl.*", func(context.Context, engine.Envelope) error {
		return fmt.Errorf("notify api down (run %d)", c.inc("notify_owner"))
	})}, func(c *Config) {
		c.MaxAttempts = attempts
		c.RetryBackoffBase, c.RetryBackoffMax = 50*time.Millisecond, 100*time.Millisecond
	})
	env := enginetest.Envelope(t, h.tenant, "bowl.food_low", 1, nil)
	h.send(env)
	h.waitFor("message in the DLQ", func() bool { return len(h.double.Messages(h.q.DLQURL)) == 1 })
	if got := c.get("notify_owner"); got != attempts {
		t.Errorf("handler runs = %d; want %d", got, attempts)
	}
	letters, err := h.dl.ForEvent(h.ctx, h.tenant, env.ID)
	if err != nil || len(letters) != 1 {
		t.Fatalf("dead letters = %+v, %v; want one", letters, err)
	}
	if l := letters[0]; l.Attempts != attempts || l.ReceiveCount != 1 || l.Error != fmt.Sprintf("notify api down (run %d)", attempts) {
		t.Errorf("dead letter = attempts %d, receive %d, %q; want attempts %d, receive 1, the last error", l.Attempts, l.ReceiveCount, l.Error, attempts)
	}
}

// TestAttemptBudget: a retryable failure is final at MaxAttempts counted on
// the row; a row already past the budget at this hold's first failure (a
// redriven dead row) gets MaxAttempts more.
func TestAttemptBudget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		attempts []int // the claim's Attempts at each failure of one hold
		want     []bool
	}{
		{"fresh row", []int{1, 2, 3, 4, 5}, []bool{false, false, false, false, true}},
		{"after a crash at attempt 3", []int{4, 5}, []bool{false, true}},
		{"redriven after dying at 5", []int{6, 7, 8, 9, 10}, []bool{false, false, false, false, true}},
	} {
		var b budget
		for i, a := range tc.attempts {
			if got := b.final(a, 5); got != tc.want[i] {
				t.Errorf("%s: final(attempts %d) = %v; want %v", tc.name, a, got, tc.want[i])
			}
		}
	}
}

// TestRetryBudgetWithinHold: Validate refuses an attempt budget that could
// outlast half of SQS's 12-hour hold.
func TestRetryBudgetWithinHold(t *testing.T) {
	base := Config{Queue: &enginetest.FIFO{}, QueueURL: "q", DLQURL: "d", Inbox: &inbox.Store{}, DeadLetters: &deadletter.Store{}}
	if err := base.Validate(); err != nil {
		t.Fatalf("defaults: Validate = %v; want nil", err)
	}
	long := base
	long.MaxAttempts, long.MaxRunTime, long.RetryBackoffMax = 100, 2*time.Minute, 2*time.Minute
	if err := long.Validate(); !errors.Is(err, ErrRetryPastHold) {
		t.Errorf("100 x (2m + 2m): Validate = %v; want ErrRetryPastHold", err)
	}
}

// TestFailingHeadDoesNotHoldOtherTenants: a lane that retries its head in
// place leaves its slots to the pollers while it waits. With MaxInFlight
// 10, tenant A's ten events fill the pool and A's head fails three times;
// tenant B's event, sent after them, must run while A's head is still
// failing, not after A's whole lane (before parking it ran last: the pool
// stayed full of A's held lane until A was done).
func TestFailingHeadDoesNotHoldOtherTenants(t *testing.T) {
	const failures = 3
	h := newDoubleHarness(t, 3*time.Second, 10)
	a, b := h.tenant+"a", h.tenant+"b"
	var mu sync.Mutex
	var runs []string
	headRuns := 0
	for seq := uint64(1); seq <= 10; seq++ {
		h.send(enginetest.Envelope(t, a, "bowl.food_low", seq, nil))
	}
	h.send(enginetest.Envelope(t, b, "bowl.food_low", 1, nil))
	h.start([]engine.Subscription{durable("notify_owner", "bowl.*", func(_ context.Context, env engine.Envelope) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, fmt.Sprintf("%s%d", env.Tenant[len(env.Tenant)-1:], env.Seq))
		if env.Tenant == a && env.Seq == 1 && headRuns < failures {
			headRuns++
			return fmt.Errorf("push provider 503 (run %d)", headRuns)
		}
		return nil
	})}, func(c *Config) {
		c.MaxInFlight = 10
		c.MaxAttempts = failures + 1
		c.RetryBackoffBase, c.RetryBackoffMax = 300*time.Millisecond, 300*time.Millisecond
	})
	h.waitFor("every message deleted", func() bool {
		for _, m := range h.double.Messages(h.q.URL) {
			if !m.Deleted {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	firstB, lastAHead := -1, -1
	for i, r := range runs {
		switch r {
		case "b1":
			firstB = i
		case "a1":
			lastAHead = i
		}
	}
	if firstB < 0 || firstB > lastAHead {
		t.Errorf("runs = %v; want b1 before a1's last (successful) run: tenant b must not wait for a's failing head", runs)
	}
	var aRuns []string
	for _, r := range runs {
		if r[0] == 'a' {
			aRuns = append(aRuns, r)
		}
	}
	if got, want := fmt.Sprint(aRuns), "[a1 a1 a1 a1 a2 a3 a4 a5 a6 a7 a8 a9 a10]"; got != want {
		t.Errorf("tenant a runs = %s; want %s", got, want)
	}
}
