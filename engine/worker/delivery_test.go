package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// seqs returns 1..n as "[1 2 ... n]".
func seqs(n int) string {
	var s []uint64
	for i := range n {
		s = append(s, uint64(i+1))
	}
	return fmt.Sprint(s)
}

// On a queue that behaves as SQS documents (up to ten messages of one
// group per receive), per-tenant order holds, a retryable failure in the
// middle of a group's batch holds back the rest of the group, and the
// messages queued behind the one being handled stay invisible while they
// wait, so none is received twice, although handling the batch takes
// longer than the visibility timeout. Deletes and visibility changes are
// batched.
func TestSeveralMessagesPerGroupStayInOrderAndInvisible(t *testing.T) {
	const perTenant = 12
	h := newDoubleHarness(t, 3*time.Second, 5)
	a, b, c := h.tenant+"a", h.tenant+"b", h.tenant+"c"
	var mu sync.Mutex
	runs := map[string][]uint64{}
	failed := false
	last := map[string]engine.Envelope{}
	for _, tenant := range []string{a, b, c} {
		for seq := uint64(1); seq <= perTenant; seq++ {
			env := enginetest.Envelope(t, tenant, "bowl.refilled", seq, nil)
			h.send(env)
			last[tenant] = env
		}
	}
	h.start([]engine.Subscription{durable("record_intake", "bowl.*", func(_ context.Context, env engine.Envelope) error {
		mu.Lock()
		runs[env.Tenant] = append(runs[env.Tenant], env.Seq)
		fail := env.Tenant == a && env.Seq == 5 && !failed
		failed = failed || fail
		mu.Unlock()
		// A slow handler: ten of them take longer than the visibility
		// timeout, so the last messages of a batch wait past it.
		time.Sleep(350 * time.Millisecond)
		if fail {
			return errors.New("flaky")
		}
		return nil
	})}, func(c *Config) {
		c.Pollers, c.Lease, c.Heartbeat = 2, time.Second, 300*time.Millisecond
	})
	for _, tenant := range []string{a, b, c} {
		h.waitFor("the last event of "+tenant, func() bool { return h.row(last[tenant].ID, "record_intake").Status == inbox.Completed })
	}
	h.waitFor("queue drained", func() bool { return h.depth(h.q.URL) == 0 })
	mu.Lock()
	defer mu.Unlock()
	if got, want := fmt.Sprint(runs[a]), "[1 2 3 4 5 5 6 7 8 9 10 11 12]"; got != want {
		t.Errorf("runs of %s by seq = %s; want %s (the failed 5 retried before 6)", a, got, want)
	}
	for _, tenant := range []string{b, c} {
		if got, want := fmt.Sprint(runs[tenant]), seqs(perTenant); got != want {
			t.Errorf("runs of %s by seq = %s; want %s", tenant, got, want)
		}
	}
	for _, m := range h.double.Messages(h.q.URL) {
		if !strings.Contains(m.Body, a) && m.Receives != 1 {
			t.Errorf("message %s of group %s received %d times; want once (its visibility lapsed while it waited)", m.ID, m.Group, m.Receives)
		}
	}
	if n := h.double.Calls("ChangeMessageVisibilityBatch"); n == 0 {
		t.Error("no ChangeMessageVisibilityBatch call; want the queued messages' visibility extended")
	}
	for _, op := range []string{"DeleteMessage", "ChangeMessageVisibility"} {
		if n := h.double.Calls(op); n != 0 {
			t.Errorf("%s calls = %d; want 0 (batched calls only)", op, n)
		}
	}
	for _, op := range []string{"DeleteMessageBatch", "ChangeMessageVisibilityBatch"} {
		if n := h.double.Errors(op); n != 0 {
			t.Errorf("%s errors = %d; want 0 (no stale receipt handle)", op, n)
		}
	}
}

// A slow group does not hold up the others: with one poller, while one
// tenant's handler blocks, another tenant's events, sent after it started,
// are received and completed.
func TestSlowGroupDoesNotHoldUpOthers(t *testing.T) {
	h := newHarness(t, 5*time.Second, 5)
	slow, fast := h.tenant+"slow", h.tenant+"fast"
	release, started := make(chan struct{}), make(chan struct{}, 1)
	h.start([]engine.Subscription{durable("record_intake", "bowl.*", func(ctx context.Context, env engine.Envelope) error {
		if env.Tenant != slow {
			return nil
		}
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})}, func(c *Config) { c.Pollers = 1 })
	blocked := enginetest.Envelope(t, slow, "bowl.refilled", 1, nil)
	h.send(blocked)
	select {
	case <-started:
	case <-h.ctx.Done():
		t.Fatal("the slow handler never started")
	}
	var fastOnes []engine.Envelope
	for seq := uint64(1); seq <= 5; seq++ {
		env := enginetest.Envelope(t, fast, "bowl.refilled", seq, nil)
		h.send(env)
		fastOnes = append(fastOnes, env)
	}
	for _, env := range fastOnes {
		h.waitFor("the fast tenant's events while the slow one blocks", func() bool {
			return h.row(env.ID, "record_intake").Status == inbox.Completed
		})
	}
	if r := h.row(blocked.ID, "record_intake"); r.Status != inbox.Pending {
		t.Errorf("slow event row = %s; want still pending", r.Status)
	}
	close(release)
	h.waitFor("the slow event", func() bool { return h.row(blocked.ID, "record_intake").Status == inbox.Completed })
}

// An event's subscriptions run at the same time, each with its own claim:
// every handler waits until all three are running.
func TestSubscriptionsOfAnEventRunConcurrently(t *testing.T) {
	h := newHarness(t, 5*time.Second, 5)
	var running atomic.Int32
	all := make(chan struct{})
	barrier := func(ctx context.Context, _ engine.Envelope) error {
		if running.Add(1) == 3 {
			close(all)
		}
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second): // hang guard, not a timing assertion
			return errors.New("ran without its siblings")
		}
	}
	names := []string{"shopify_mirror", "notify_buyer", "book_shipment"}
	var subs []engine.Subscription
	for _, n := range names {
		subs = append(subs, durable(n, "com.*", barrier))
	}
	h.start(subs, nil)
	env := enginetest.Envelope(t, h.tenant, "com.payment_completed", 1, nil)
	h.send(env)
	for _, n := range names {
		h.waitFor(n+" completed", func() bool { return h.row(env.ID, n).Status == inbox.Completed })
		if r := h.row(env.ID, n); r.Attempts != 1 {
			t.Errorf("%s attempts = %d; want 1", n, r.Attempts)
		}
	}
}

// A handler that runs past MaxRunTime has its context cancelled with cause
// ErrRunTimeExceeded, and the run counts as a retryable failure: the next
// receive runs it again.
func TestHandlerMaxRunTime(t *testing.T) {
	h := newDoubleHarness(t, 2*time.Second, 5)
	var c calls
	causes := make(chan error, 1)
	h.start([]engine.Subscription{durable("book_shipment", "com.*", func(ctx context.Context, env engine.Envelope) error {
		if c.inc("book_shipment") > 1 {
			return nil
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})}, func(c *Config) { c.MaxRunTime = 500 * time.Millisecond })
	env := enginetest.Envelope(t, h.tenant, "com.payment_completed", 1, nil)
	h.send(env)
	h.waitFor("completion on the second run", func() bool { return h.row(env.ID, "book_shipment").Status == inbox.Completed })
	if cause := <-causes; !errors.Is(cause, ErrRunTimeExceeded) {
		t.Errorf("first run's context cause = %v; want ErrRunTimeExceeded", cause)
	}
	r := h.row(env.ID, "book_shipment")
	if r.Attempts != 2 || !strings.Contains(r.LastError, ErrRunTimeExceeded.Error()) {
		t.Errorf("row = %+v; want 2 attempts and the first run's error naming the maximum run time", r)
	}
	if letters, _ := h.dl.ForEvent(h.ctx, h.tenant, env.ID); len(letters) != 0 {
		t.Errorf("dead letters = %+v; want none (an overrun is retryable)", letters)
	}
}

// A handler that ignores its context past MaxRunTime does not keep its
// group forever: the worker stops extending the visibility of its message
// and of the one queued behind it, SQS hands them out again, and both
// complete. Without a bound the heartbeat would keep the message invisible
// and it would never be received a second time.
func TestHandlerIgnoringItsContextLosesItsGroup(t *testing.T) {
	h := newDoubleHarness(t, 2*time.Second, 5)
	release := make(chan struct{})
	var once sync.Once
	first := enginetest.Envelope(t, h.tenant, "com.payment_completed", 1, nil)
	second := enginetest.Envelope(t, h.tenant, "com.payment_completed", 2, nil)
	h.send(first)
	h.send(second)
	h.start([]engine.Subscription{durable("book_shipment", "com.*", func(_ context.Context, env engine.Envelope) error {
		blocks := false
		if env.ID == first.ID {
			once.Do(func() { blocks = true })
		}
		if blocks {
			<-release // ignores its context
		}
		return nil
	})}, func(c *Config) { c.MaxRunTime = 500 * time.Millisecond })
	h.waitFor("the first message received again", func() bool {
		for _, m := range h.double.Messages(h.q.URL) {
			if strings.Contains(m.Body, first.ID) && m.Receives >= 2 {
				return true
			}
		}
		return false
	})
	close(release)
	for _, env := range []engine.Envelope{first, second} {
		h.waitFor("completion of seq "+fmt.Sprint(env.Seq), func() bool { return h.row(env.ID, "book_shipment").Status == inbox.Completed })
	}
	h.waitFor("queue drained", func() bool { return h.depth(h.q.URL) == 0 })
	if n := h.obs.get("abandoned"); n < 2 {
		t.Errorf("abandoned messages = %d; want at least 2 (the overrunning one and the one queued behind it)", n)
	}
	if n := h.depth(h.q.DLQURL); n != 0 {
		t.Errorf("DLQ depth = %d; want 0", n)
	}
}

// The worker's receive loop leaves room: never more messages held than
// MaxInFlight.
func TestMaxInFlightBoundsHeldMessages(t *testing.T) {
	h := newDoubleHarness(t, 10*time.Second, 5)
	const tenants = 6
	release := make(chan struct{})
	var started atomic.Int32
	var envs []engine.Envelope
	for i := range tenants {
		env := enginetest.Envelope(t, fmt.Sprintf("%s%d", h.tenant, i), "bowl.refilled", 1, nil)
		h.send(env)
		envs = append(envs, env)
	}
	h.start([]engine.Subscription{durable("record_intake", "bowl.*", func(ctx context.Context, _ engine.Envelope) error {
		started.Add(1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})}, func(c *Config) {
		c.MaxInFlight, c.MaxMessages, c.Pollers, c.Lease, c.Heartbeat = 4, 2, 2, 5*time.Second, time.Second
	})
	h.waitFor("four handlers blocked", func() bool { return started.Load() == 4 })
	inFlight := 0
	for _, m := range h.double.Messages(h.q.URL) {
		if m.InFlight {
			inFlight++
		}
	}
	if inFlight != 4 {
		t.Errorf("messages in flight = %d; want MaxInFlight 4", inFlight)
	}
	close(release)
	for _, env := range envs {
		h.waitFor("all events", func() bool { return h.row(env.ID, "record_intake").Status == inbox.Completed })
	}
	if slices.ContainsFunc(h.double.Messages(h.q.URL), func(m enginetest.FIFOMessage) bool { return m.Receives != 1 }) {
		t.Error("a message was received twice; want once each")
	}
}
