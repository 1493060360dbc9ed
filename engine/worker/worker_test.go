package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	lstest.Main(m, localstack.DynamoDB, localstack.SQS)
}

// harness runs workers in this process against the local stack, on test
// queues with a short visibility timeout.
type harness struct {
	t     *testing.T
	ctx   context.Context
	queue QueueAPI // fauxqs, or the FIFO double
	// double is the FIFO double when the harness uses one.
	double *enginetest.FIFO
	q      enginetest.Queues
	inbox  *inbox.Store
	dl     *deadletter.Store
	tenant string
	obs    *countingObserver
}

// newHarness runs on fauxqs test queues.
func newHarness(t *testing.T, visibility time.Duration, maxReceive int) *harness {
	t.Helper()
	h := newStores(t)
	h.queue = sqs.NewFromConfig(lstest.AWSConfig(t))
	h.q = enginetest.FIFOQueues(t, "worker", visibility, maxReceive)
	return h
}

// newDoubleHarness runs on an enginetest.FIFO double, which behaves as SQS
// documents (several messages of a group per receive, stale receipt
// handles refused), with the inbox and dead letters on DynamoDB Local.
func newDoubleHarness(t *testing.T, visibility time.Duration, maxReceive int) *harness {
	t.Helper()
	h := newStores(t)
	h.double = enginetest.NewFIFO(enginetest.FIFOConfig{Visibility: visibility, MaxReceiveCount: maxReceive})
	h.queue = h.double
	h.q = enginetest.Queues{URL: h.double.URL, DLQURL: h.double.DLQURL}
	return h
}

func newStores(t *testing.T) *harness {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	names := lstest.Names(t)
	in, err := inbox.New(inbox.Config{Client: ddb, Table: names.InboxTable()})
	if err != nil {
		t.Fatal(err)
	}
	dl, err := deadletter.New(ddb, names.DeadLettersTable(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{
		t: t, ctx: enginetest.Ctx(t),
		inbox: in, dl: dl, tenant: "t" + strings.ToLower(ulid.Make().String()), obs: newCountingObserver(),
	}
}

// start runs a worker until the test ends.
func (h *harness) start(subs []engine.Subscription, tweak func(*Config)) *Worker {
	h.t.Helper()
	cfg := Config{
		Queue: h.queue, QueueURL: h.q.URL, DLQURL: h.q.DLQURL, Inbox: h.inbox, DeadLetters: h.dl,
		Subscriptions: subs, WaitTime: time.Second, Lease: time.Second, Heartbeat: 300 * time.Millisecond,
		RetryDelay: time.Second, RetryBackoffBase: 100 * time.Millisecond, RetryBackoffMax: 300 * time.Millisecond, Logger: testkit.Logger(h.t, slog.LevelWarn), Observer: h.obs,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	w, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("Run = %v; want nil", err)
		}
	})
	return w
}

func (h *harness) send(env engine.Envelope) {
	h.t.Helper()
	h.sendRaw(enginetest.Body(h.t, env), env.Tenant, env.ID)
}

func (h *harness) sendRaw(body, group, dedup string) {
	h.t.Helper()
	_, err := h.queue.SendMessage(h.ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(h.q.URL), MessageBody: aws.String(body),
		MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(dedup),
	})
	if err != nil {
		h.t.Fatalf("send: %v", err)
	}
}

// waitFor polls cond until it holds; the deadline is only a hang guard.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	testkit.WaitFor(h.t, what, 60*time.Second, cond)
}

func (h *harness) row(eventID, sub string) inbox.Row {
	h.t.Helper()
	r, _, err := h.inbox.Get(h.ctx, eventID, sub)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// depth returns the approximate number of visible plus in-flight messages.
func (h *harness) depth(url string) int {
	h.t.Helper()
	out, err := h.queue.GetQueueAttributes(h.ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	}})
	if err != nil {
		h.t.Fatalf("queue attributes of %s: %v", url, err)
	}
	a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return a + b
}

// calls counts handler runs per subscription.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) inc(sub string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[sub]++
	return c.n[sub]
}

func (c *calls) get(sub string) int { c.mu.Lock(); defer c.mu.Unlock(); return c.n[sub] }

func durable(name, pattern string, h engine.Handler) engine.Subscription {
	return engine.Subscription{Name: name, Pattern: pattern, Lane: engine.Durable, Handler: h}
}

// TestFlakyHandlerRetriedNotDeadLettered: a handler fails once with a
// retryable error and succeeds on the second receive; it is not
// dead-lettered.
func TestFlakyHandlerRetriedNotDeadLettered(t *testing.T) {
	h := newHarness(t, 3*time.Second, 5)
	var c calls
	var tenantSeen sync.Map
	h.start([]engine.Subscription{durable("record_intake", "bowl.*", func(ctx context.Context, env engine.Envelope) error {
		tn, _ := engine.Tenant(ctx)
		tenantSeen.Store(tn, true)
		if c.inc("record_intake") == 1 {
			return errors.New("dynamodb throttled")
		}
		return nil
	})}, nil)
	env := enginetest.Envelope(t, h.tenant, "bowl.meal_finished", 1, nil)
	h.send(env)
	h.waitFor("completion", func() bool { return h.row(env.ID, "record_intake").Status == inbox.Completed })
	h.waitFor("queue drained", func() bool { return h.depth(h.q.URL) == 0 })
	if got := c.get("record_intake"); got != 2 {
		t.Errorf("handler runs = %d; want 2", got)
	}
	if r := h.row(env.ID, "record_intake"); r.Attempts != 2 || r.LastError != "dynamodb throttled" {
		t.Errorf("row = %+v; want 2 attempts and the first error kept", r)
	}
	if letters, _ := h.dl.ForEvent(h.ctx, h.tenant, env.ID); len(letters) != 0 {
		t.Errorf("dead letters = %+v; want none", letters)
	}
	if n := h.depth(h.q.DLQURL); n != 0 {
		t.Errorf("DLQ depth = %d; want 0", n)
	}
	if _, ok := tenantSeen.Load(h.tenant); !ok {
		t.Errorf("handler context tenant never %q", h.tenant)
	}
}

// TestFanOutOneFailing: one com.payment_completed, four subscriptions, one
// keeps failing; the other three complete exactly once and are not rerun
// while it retries; the failing one ends dead after MaxAttempts attempts,
// retried in place within one receive.
func TestFanOutOneFailing(t *testing.T) {
	const maxReceive = 3
	h := newHarness(t, 3*time.Second, maxReceive)
	var c calls
	ok := func(name string) engine.Subscription {
		return durable(name, "com.payment_completed", func(context.Context, engine.Envelope) error { c.inc(name); return nil })
	}
	subs := []engine.Subscription{
		ok("shopify_mirror"),
		durable("book_shipment", "com.payment_completed", func(context.Context, engine.Envelope) error {
			c.inc("book_shipment")
			return errors.New("shipping api 503")
		}),
		ok("notify_buyer"), ok("mark_tag_ordered"),
	}
	h.start(subs, func(c *Config) { c.MaxReceiveCount = maxReceive })
	env := enginetest.Envelope(t, h.tenant, "com.payment_completed", 1, map[string]any{"order_id": "o1"})
	h.send(env)
	h.waitFor("book_shipment dead", func() bool { return h.row(env.ID, "book_shipment").Status == inbox.Dead })
	h.waitFor("message moved to the DLQ", func() bool { return h.depth(h.q.URL) == 0 && h.depth(h.q.DLQURL) == 1 })
	for _, s := range []string{"shopify_mirror", "notify_buyer", "mark_tag_ordered"} {
		if got := c.get(s); got != 1 {
			t.Errorf("%s ran %d times; want exactly 1", s, got)
		}
		if r := h.row(env.ID, s); r.Status != inbox.Completed {
			t.Errorf("%s row = %s; want completed", s, r.Status)
		}
	}
	if got := c.get("book_shipment"); got != DefaultMaxAttempts {
		t.Errorf("book_shipment ran %d times; want %d (the attempt budget)", got, DefaultMaxAttempts)
	}
	letters, err := h.dl.ForEvent(h.ctx, h.tenant, env.ID)
	if err != nil || len(letters) != 1 || letters[0].Subscription != "book_shipment" || letters[0].Error != "shipping api 503" {
		t.Errorf("dead letters = %+v, %v; want one for book_shipment", letters, err)
	}
}

// TestExhaustionDeadLettersOnce: a handler that always fails ends dead
// with one dead letter after MaxAttempts attempts, all on the first
// receive, and its message is in the DLQ.
func TestExhaustionDeadLettersOnce(t *testing.T) {
	const maxReceive = 5
	h := newHarness(t, 3*time.Second, maxReceive)
	var c calls
	h.start([]engine.Subscription{durable("notify_owner", "bowl.*", func(context.Context, engine.Envelope) error {
		return fmt.Errorf("notify api down (run %d)", c.inc("notify_owner"))
	})}, func(c *Config) { c.MaxReceiveCount = maxReceive })
	env := enginetest.Envelope(t, h.tenant, "bowl.food_low", 1, nil)
	h.send(env)
	h.waitFor("dead row", func() bool { return h.row(env.ID, "notify_owner").Status == inbox.Dead })
	h.waitFor("message in the DLQ", func() bool { return h.depth(h.q.URL) == 0 && h.depth(h.q.DLQURL) == 1 })
	if got := c.get("notify_owner"); got != DefaultMaxAttempts {
		t.Errorf("handler runs = %d; want %d", got, DefaultMaxAttempts)
	}
	letters, _ := h.dl.ForEvent(h.ctx, h.tenant, env.ID)
	if len(letters) != 1 || letters[0].ReceiveCount != 1 || letters[0].Attempts != DefaultMaxAttempts || letters[0].Error != "notify api down (run 5)" {
		t.Errorf("dead letters = %+v; want one, at receive 1 after %d attempts, with the last error", letters, DefaultMaxAttempts)
	}
	dlq := enginetest.Drain(h.ctx, t, sqs.NewFromConfig(lstest.AWSConfig(t)), h.q.DLQURL, func(got []enginetest.Drained) bool { return len(got) == 1 })
	if got, err := engine.DecodeImageJSON([]byte(dlq[0].Body)); err != nil || got.ID != env.ID || dlq[0].GroupID != h.tenant {
		t.Errorf("DLQ message = %+v (%v); want event %s in group %s", dlq[0], err, env.ID, h.tenant)
	}
}

// TestTerminalErrorDeadLettersAtOnce: a terminal error is not retried.
func TestTerminalErrorDeadLettersAtOnce(t *testing.T) {
	h := newHarness(t, 3*time.Second, 5)
	var c calls
	h.start([]engine.Subscription{durable("mark_tag_ordered", "com.*", func(context.Context, engine.Envelope) error {
		c.inc("x")
		return Terminal(errors.New("order does not exist"))
	})}, nil)
	env := enginetest.Envelope(t, h.tenant, "com.payment_completed", 1, nil)
	h.send(env)
	h.waitFor("message in the DLQ", func() bool { return h.depth(h.q.URL) == 0 && h.depth(h.q.DLQURL) == 1 })
	if got := c.get("x"); got != 1 {
		t.Errorf("handler runs = %d; want 1", got)
	}
	if r := h.row(env.ID, "mark_tag_ordered"); r.Status != inbox.Dead {
		t.Errorf("row status = %s; want dead", r.Status)
	}
}

// TestPoisonPillDoesNotBlockGroup: an undecodable body is recorded under
// the global partition and deleted; the next message of its group runs.
func TestPoisonPillDoesNotBlockGroup(t *testing.T) {
	h := newHarness(t, 3*time.Second, 5)
	var c calls
	h.start([]engine.Subscription{durable("record_intake", "bowl.*", func(context.Context, engine.Envelope) error {
		c.inc("record_intake")
		return nil
	})}, nil)
	poisonDedup := ulid.Make().String()
	h.sendRaw(`{"this is":"not an event row"}`, h.tenant, poisonDedup)
	env := enginetest.Envelope(t, h.tenant, "bowl.refilled", 1, nil)
	h.send(env)
	h.waitFor("the event after the pill", func() bool { return h.row(env.ID, "record_intake").Status == inbox.Completed })
	h.waitFor("queue drained", func() bool { return h.depth(h.q.URL) == 0 })
	if n := h.obs.get("poison"); n != 1 {
		t.Errorf("poison pills counted = %d; want 1", n)
	}
	pills, err := h.dl.Poison(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pills {
		if p.GroupID == h.tenant && p.Body == `{"this is":"not an event row"}` {
			found = true
		}
	}
	if !found {
		t.Errorf("no poison letter for group %s among %d", h.tenant, len(pills))
	}
	if n := h.depth(h.q.DLQURL); n != 0 {
		t.Errorf("DLQ depth = %d; want 0 (poison is deleted, not redriven)", n)
	}
}

// TestUnmatchedTypeCountedAndDeleted: an event nobody subscribes to is
// logged, counted by type and deleted.
func TestUnmatchedTypeCountedAndDeleted(t *testing.T) {
	h := newHarness(t, 3*time.Second, 5)
	h.start([]engine.Subscription{durable("record_intake", "bowl.*", func(context.Context, engine.Envelope) error { return nil })}, nil)
	env := enginetest.Envelope(t, h.tenant, "com.order_created", 1, nil)
	h.send(env)
	h.waitFor("unmatched counted", func() bool { return h.obs.get("unmatched:com.order_created") == 1 })
	h.waitFor("queue drained", func() bool { return h.depth(h.q.URL) == 0 })
	if _, ok, _ := h.inbox.Get(h.ctx, env.ID, "record_intake"); ok {
		t.Error("an inbox row exists for an unmatched event; want none")
	}
}

// TestDeclaredTypeWithoutDurableWorkIsNotUnmatched: a type the catalog
// declares but no DURABLE subscription matches is deleted without counting
// as unmatched; an undeclared type still counts.
func TestDeclaredTypeWithoutDurableWorkIsNotUnmatched(t *testing.T) {
	h := newHarness(t, 3*time.Second, 5)
	h.start([]engine.Subscription{durable("record_intake", "bowl.*", func(context.Context, engine.Envelope) error { return nil })},
		func(c *Config) { c.Declared = func(typ string) bool { return typ == "com.order_created" } })
	h.send(enginetest.Envelope(t, h.tenant, "com.order_created", 1, nil))
	h.waitFor("declared event deleted", func() bool { return h.obs.get("deleted") == 1 })
	h.send(enginetest.Envelope(t, h.tenant, "com.surprise", 2, nil))
	h.waitFor("undeclared event counted", func() bool { return h.obs.get("unmatched:com.surprise") == 1 })
	if n := h.obs.get("unmatched:com.order_created"); n != 0 {
		t.Errorf("unmatched count of the declared com.order_created = %d; want 0", n)
	}
}

// TestLeaseTooLongRefused: Run refuses a lease as long as the visibility.
func TestLeaseTooLongRefused(t *testing.T) {
	h := newHarness(t, 3*time.Second, 5)
	w, err := New(Config{Queue: h.queue, QueueURL: h.q.URL, DLQURL: h.q.DLQURL, Inbox: h.inbox, DeadLetters: h.dl, Lease: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(h.ctx); !errors.Is(err, ErrLeaseTooLong) {
		t.Errorf("Run = %v; want ErrLeaseTooLong", err)
	}
}

// countingObserver counts events by name for assertions.
type countingObserver struct {
	NopObserver
	mu sync.Mutex
	n  map[string]int
}

func newCountingObserver() *countingObserver { return &countingObserver{n: map[string]int{}} }

func (o *countingObserver) add(k string) { o.mu.Lock(); o.n[k]++; o.mu.Unlock() }
func (o *countingObserver) get(k string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[k]
}
func (o *countingObserver) Poison()              { o.add("poison") }
func (o *countingObserver) Unmatched(typ string) { o.add("unmatched:" + typ) }
func (o *countingObserver) Deleted()             { o.add("deleted") }

func (o *countingObserver) Claim(sub, outcome string) { o.add("claim:" + outcome) }

func (o *countingObserver) InfraRetry(op string) { o.add("infra:" + op) }
func (o *countingObserver) Abandoned(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n["abandoned"] += n
}

var _ Observer = (*countingObserver)(nil)

// TestHeartbeatKeepsLongHandler: a handler that runs two leases long and
// longer than the queue's visibility timeout (5s), with a second worker
// polling the same queue, runs once: the heartbeat extends both the lease
// and the message visibility, so the message is never handed to the other
// worker.
func TestHeartbeatKeepsLongHandler(t *testing.T) {
	h := newHarness(t, 5*time.Second, 5)
	var c calls
	sub := durable("book_shipment", "com.*", func(ctx context.Context, env engine.Envelope) error {
		c.inc("book_shipment")
		select {
		case <-time.After(6 * time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	long := func(c *Config) { c.Lease, c.Heartbeat = 3*time.Second, 500*time.Millisecond }
	h.start([]engine.Subscription{sub}, long)
	h.start([]engine.Subscription{sub}, long)
	env := enginetest.Envelope(t, h.tenant, "com.payment_completed", 1, nil)
	h.send(env)
	h.waitFor("completion", func() bool { return h.row(env.ID, "book_shipment").Status == inbox.Completed })
	h.waitFor("queue drained", func() bool { return h.depth(h.q.URL) == 0 })
	if got := c.get("book_shipment"); got != 1 {
		t.Errorf("handler runs = %d; want 1", got)
	}
	if n := h.obs.get("claim:" + ClaimHeld); n != 0 {
		t.Errorf("held claims = %d; want 0 (the message was redelivered during the handler)", n)
	}
	if r := h.row(env.ID, "book_shipment"); r.Attempts != 1 {
		t.Errorf("attempts = %d; want 1", r.Attempts)
	}
}

// TestOrderWithinGroupSurvivesRetry: five events of one tenant; the second
// fails once. No later event of the tenant runs before it completes.
func TestOrderWithinGroupSurvivesRetry(t *testing.T) {
	h := newHarness(t, 3*time.Second, 5)
	var mu sync.Mutex
	var runs []uint64
	failed := false
	h.start([]engine.Subscription{durable("record_intake", "bowl.*", func(_ context.Context, env engine.Envelope) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, env.Seq)
		if env.Seq == 2 && !failed {
			failed = true
			return errors.New("flaky")
		}
		return nil
	})}, func(c *Config) { c.Pollers = 2 })
	var last engine.Envelope
	for seq := uint64(1); seq <= 5; seq++ {
		last = enginetest.Envelope(t, h.tenant, "bowl.refilled", seq, nil)
		h.send(last)
	}
	h.waitFor("the last event", func() bool { return h.row(last.ID, "record_intake").Status == inbox.Completed })
	mu.Lock()
	defer mu.Unlock()
	if got, want := fmt.Sprint(runs), "[1 2 2 3 4 5]"; got != want {
		t.Errorf("handler runs by seq = %s; want %s", got, want)
	}
}
