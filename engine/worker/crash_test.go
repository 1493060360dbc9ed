package worker

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// The worker child: the test binary re-executed as a real worker process.
// Its handler appends "start <id>" to the runs file, then either blocks
// forever (childBlockEnv=1) or appends "done <id>" and succeeds.
const (
	childEnv      = "BOWLINE_WORKER_TEST_CHILD"
	childQueueEnv = "BOWLINE_WORKER_TEST_QUEUE"
	childDLQEnv   = "BOWLINE_WORKER_TEST_DLQ"
	childRunsEnv  = "BOWLINE_WORKER_TEST_RUNS"
	childBlockEnv = "BOWLINE_WORKER_TEST_BLOCK"
	childIDEnv    = "BOWLINE_WORKER_TEST_ID"
)

func runChild() int {
	ctx := context.Background()
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	names, err := resources.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	in, _ := inbox.New(inbox.Config{Client: ddb, Table: names.InboxTable()})
	dl, _ := deadletter.New(ddb, names.DeadLettersTable(), nil)
	runs := os.Getenv(childRunsEnv)
	block := os.Getenv(childBlockEnv) == "1"
	appendLine := func(s string) {
		f, err := os.OpenFile(runs, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, s)
			f.Close()
		}
	}
	w, err := New(Config{
		Queue: sqs.NewFromConfig(cfg), QueueURL: os.Getenv(childQueueEnv), DLQURL: os.Getenv(childDLQEnv),
		Inbox: in, DeadLetters: dl, WorkerID: os.Getenv(childIDEnv),
		// A lease well above a heartbeat's worst latency on a loaded
		// machine, and below the test queues' 3s visibility.
		WaitTime: time.Second, Lease: 2 * time.Second, Heartbeat: 400 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Subscriptions: []engine.Subscription{durable("book_shipment", "com.*", func(ctx context.Context, env engine.Envelope) error {
			appendLine("start " + env.ID)
			if block {
				// Hang between claim and complete until killed, or until the
				// worker cancels the context (lease lost); then try to
				// complete late.
				<-ctx.Done()
				appendLine("late " + env.ID)
				return nil
			}
			appendLine("done " + env.ID)
			return nil
		})},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChild starts this test binary as a worker process (see the child
// env vars) on h's queues, recording handler runs in the file runs; the
// process is killed and reaped at cleanup.
func startChild(t *testing.T, h *harness, runs, id string, block bool) *testkit.Child {
	t.Helper()
	cmd := testkit.TestBinary("-test.run=^$")
	b := "0"
	if block {
		b = "1"
	}
	cmd.Env = append(os.Environ(), childEnv+"=1", childQueueEnv+"="+h.q.URL, childDLQEnv+"="+h.q.DLQURL,
		childRunsEnv+"="+runs, childBlockEnv+"="+b, childIDEnv+"="+id)
	return testkit.StartChild(t, id, cmd)
}

// countRuns counts the handler runs recorded in the file runs whose line
// starts with prefix ("start " or "done ").
func countRuns(runs, prefix string) int {
	b, _ := os.ReadFile(runs)
	return bytes.Count(b, []byte(prefix))
}

// TestCrashBetweenClaimAndComplete: a handler blocks; kill -9 the worker
// process between claim and complete; a new worker runs the handler again
// after the visibility timeout, and it completes once.
func TestCrashBetweenClaimAndComplete(t *testing.T) {
	h := newHarness(t, 3*time.Second, 5)
	runs := t.TempDir() + "/runs"
	start := func(id string, block bool) *testkit.Child { return startChild(t, h, runs, id, block) }
	count := func(prefix string) int { return countRuns(runs, prefix) }
	env := testEnvelope(t, h.tenant)
	h.send(env)
	a := start("worker-a", true)
	h.waitFor("worker A to start the handler", func() bool { return count("start ") == 1 })
	if r := h.row(env.ID, "book_shipment"); r.Status != inbox.Pending || r.Worker != "worker-a" {
		t.Fatalf("row while A runs = %+v; want pending, claimed by worker-a", r)
	}
	if err := a.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait(h.ctx)
	start("worker-b", false)
	h.waitFor("worker B to complete", func() bool { return h.row(env.ID, "book_shipment").Status == inbox.Completed })
	h.waitFor("queue drained", func() bool { return h.depth(h.q.URL) == 0 })
	if s, d := count("start "), count("done "); s != 2 || d != 1 {
		t.Errorf("handler starts = %d, completions = %d; want 2 and 1", s, d)
	}
	if r := h.row(env.ID, "book_shipment"); r.Worker != "worker-b" || r.Attempts != 2 {
		t.Errorf("row = %+v; want completed by worker-b on attempt 2", r)
	}
	if n := h.depth(h.q.DLQURL); n != 0 {
		t.Errorf("DLQ depth = %d; want 0", n)
	}
}

// TestLeaseTakeoverWorkerProcess: worker A's lease expires while it hangs
// (the process is stopped with SIGSTOP, so its heartbeat cannot run); worker
// B runs the handler and completes; A, resumed, does not overwrite B's
// record.
func TestLeaseTakeoverWorkerProcess(t *testing.T) {
	h := newHarness(t, 3*time.Second, 5)
	runs := t.TempDir() + "/runs"
	env := testEnvelope(t, h.tenant)
	h.send(env)
	mk := func(id string, block bool) *testkit.Child { return startChild(t, h, runs, id, block) }
	count := func(prefix string) int { return countRuns(runs, prefix) }
	a := mk("worker-a", true)
	h.waitFor("worker A to start the handler", func() bool { return count("start ") == 1 })
	if err := a.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	mk("worker-b", false)
	h.waitFor("worker B to complete", func() bool { return h.row(env.ID, "book_shipment").Status == inbox.Completed })
	if err := a.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// A wakes with an expired lease: its watchdog (or its heartbeat, which
	// gets ErrLeaseLost) cancels the handler's context; the handler returns
	// nil and A tries to complete, late.
	h.waitFor("worker A's late completion attempt", func() bool { return count("late ") == 1 })
	h.waitFor("queue drained", func() bool { return h.depth(h.q.URL) == 0 })
	if r := h.row(env.ID, "book_shipment"); r.Status != inbox.Completed || r.Worker != "worker-b" {
		t.Errorf("row = %+v; want completed by worker-b", r)
	}
	if d := count("done "); d != 1 {
		t.Errorf("completions = %d; want 1", d)
	}
}

func testEnvelope(t *testing.T, tenant string) engine.Envelope {
	t.Helper()
	return enginetest.Envelope(t, tenant, "com.payment_completed", 1, map[string]any{"order_id": "o1"})
}
