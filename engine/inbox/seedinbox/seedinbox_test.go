package seedinbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/engine/inbox/seedinbox"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Every test runs the same scenario twice: with the seed article's inbox
// (seedinbox.Consumer) and with Bowline's (engine/worker on engine/inbox),
// and asserts the seed one's flaw and Bowline's correct behaviour.
const (
	modeSeed    = "seed"
	modeBowline = "bowline"
)

// The child: this test binary re-executed as a real consumer process of
// either mode. Its handler appends "start <id>" to the runs file, then
// blocks until killed (childBlockEnv=1) or appends "done <id>".
const (
	childEnv      = "SEEDINBOX_TEST_CHILD" // the mode
	childQueueEnv = "SEEDINBOX_TEST_QUEUE"
	childDLQEnv   = "SEEDINBOX_TEST_DLQ"
	childRunsEnv  = "SEEDINBOX_TEST_RUNS"
	childBlockEnv = "SEEDINBOX_TEST_BLOCK"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	lstest.Main(m, localstack.DynamoDB, localstack.SQS)
}

func runChild(mode string) int {
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
	block := os.Getenv(childBlockEnv) == "1"
	runs := os.Getenv(childRunsEnv)
	appendLine := func(s string) {
		f, err := os.OpenFile(runs, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, s)
			f.Close()
		}
	}
	sub := durable("book_shipment", func(ctx context.Context, env engine.Envelope) error {
		appendLine("start " + env.ID)
		if block {
			<-ctx.Done() // until killed
			return ctx.Err()
		}
		appendLine("done " + env.ID)
		return nil
	})
	st := newStores(ddb, names)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := st.run(ctx, mode, sqs.NewFromConfig(cfg), enginetest.Queues{URL: os.Getenv(childQueueEnv), DLQURL: os.Getenv(childDLQEnv)}, sub, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// stores are both inboxes and the dead letters on one stack.
type stores struct {
	seed  *seedinbox.Store
	inbox *inbox.Store
	dl    *deadletter.Store
}

func newStores(ddb *dynamodb.Client, names resources.Names) *stores {
	seed, _ := seedinbox.NewStore(ddb, names.InboxTable(), nil)
	in, _ := inbox.New(inbox.Config{Client: ddb, Table: names.InboxTable()})
	dl, _ := deadletter.New(ddb, names.DeadLettersTable(), nil)
	return &stores{seed: seed, inbox: in, dl: dl}
}

// run runs a consumer of mode on q until ctx ends.
func (s *stores) run(ctx context.Context, mode string, q *sqs.Client, qs enginetest.Queues, sub engine.Subscription, log *slog.Logger) error {
	if mode == modeSeed {
		c, err := seedinbox.New(seedinbox.Config{
			Queue: q, QueueURL: qs.URL, Store: s.seed, DeadLetters: s.dl,
			Subscriptions: []engine.Subscription{sub}, WaitTime: time.Second, Logger: log,
		})
		if err != nil {
			return err
		}
		return c.Run(ctx)
	}
	w, err := worker.New(worker.Config{
		Queue: q, QueueURL: qs.URL, DLQURL: qs.DLQURL, Inbox: s.inbox, DeadLetters: s.dl,
		Subscriptions: []engine.Subscription{sub}, WaitTime: time.Second,
		// A lease below the test queues' 3s visibility.
		Lease: 2 * time.Second, Heartbeat: 400 * time.Millisecond, RetryDelay: time.Second, Logger: log,
	})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

func durable(name string, h engine.Handler) engine.Subscription {
	return engine.Subscription{Name: name, Pattern: "com.*", Lane: engine.Durable, Handler: h}
}

type harness struct {
	t      *testing.T
	ctx    context.Context
	sqs    *sqs.Client
	q      enginetest.Queues
	st     *stores
	tenant string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	return &harness{
		t: t, ctx: enginetest.Ctx(t), sqs: sqs.NewFromConfig(cfg),
		q:      enginetest.FIFOQueues(t, "seed", 3*time.Second, 5),
		st:     newStores(dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions), lstest.Names(t)),
		tenant: "t" + strings.ToLower(ulid.Make().String()),
	}
}

// start runs a consumer of mode in this process until the test ends.
func (h *harness) start(mode string, sub engine.Subscription) {
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- h.st.run(ctx, mode, h.sqs, h.q, sub, testkit.Logger(h.t, slog.LevelWarn)) }()
	h.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("Run = %v; want nil", err)
		}
	})
}

// startChild runs a consumer of mode as a child process; killed at cleanup.
func (h *harness) startChild(mode, runs string, block bool) *testkit.Child {
	h.t.Helper()
	cmd := testkit.TestBinary("-test.run=^$")
	b := "0"
	if block {
		b = "1"
	}
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childQueueEnv+"="+h.q.URL, childDLQEnv+"="+h.q.DLQURL,
		childRunsEnv+"="+runs, childBlockEnv+"="+b)
	return testkit.StartChild(h.t, mode+" consumer", cmd)
}

func (h *harness) send(env engine.Envelope, url string) {
	h.t.Helper()
	_, err := h.sqs.SendMessage(h.ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String(enginetest.Body(h.t, env)),
		MessageGroupId: aws.String(env.Tenant), MessageDeduplicationId: aws.String(env.ID),
	})
	if err != nil {
		h.t.Fatalf("send to %s: %v", url, err)
	}
}

func (h *harness) row(eventID, sub string) inbox.Row {
	h.t.Helper()
	r, _, err := h.st.inbox.Get(h.ctx, eventID, sub)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	testkit.WaitFor(h.t, what, 60*time.Second, cond)
}

func (h *harness) depth(url string) int { return enginetest.Depth(h.ctx, h.t, h.sqs, url) }

func (h *harness) envelope() engine.Envelope {
	return enginetest.Envelope(h.t, h.tenant, "com.payment_completed", 1, map[string]any{"order_id": "o1"})
}

func countRuns(runs, prefix string) int {
	b, _ := os.ReadFile(runs)
	return bytes.Count(b, []byte(prefix))
}

// TestCrashBetweenClaimAndComplete: kill -9 the consumer process while
// its handler runs (after the claim, before the completion), start
// another. With the seed inbox the redelivered message finds the pending
// row, skips the handler and is deleted: the run is lost and the row stays
// pending. Bowline's inbox takes the expired lease over and completes.
func TestCrashBetweenClaimAndComplete(t *testing.T) {
	for _, mode := range []string{modeSeed, modeBowline} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t)
			runs := t.TempDir() + "/runs"
			env := h.envelope()
			h.send(env, h.q.URL)
			a := h.startChild(mode, runs, true)
			h.waitFor("the first consumer to start the handler", func() bool { return countRuns(runs, "start ") == 1 })
			if err := a.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = a.Wait(h.ctx)
			h.startChild(mode, runs, false)
			h.waitFor("the queue to drain", func() bool { return h.depth(h.q.URL) == 0 })
			done, r := countRuns(runs, "done "), h.row(env.ID, "book_shipment")
			switch mode {
			case modeSeed:
				if done != 0 || r.Status != inbox.Pending {
					t.Errorf("seed: completions = %d, row status %q; want 0 and pending (the run lost)", done, r.Status)
				}
			default:
				if done != 1 || r.Status != inbox.Completed {
					t.Errorf("bowline: completions = %d, row status %q; want 1 and completed", done, r.Status)
				}
			}
		})
	}
}

// TestRetryableErrorKillsWork: a handler fails once with a retryable
// error (a provider's 503) and would succeed on the next receive. The seed
// inbox marks the row dead and deletes the message on the first error: one
// call, dead. Bowline's leaves the message to SQS and completes on the
// second receive.
func TestRetryableErrorKillsWork(t *testing.T) {
	for _, mode := range []string{modeSeed, modeBowline} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t)
			var mu sync.Mutex
			calls := 0
			h.start(mode, durable("book_shipment", func(ctx context.Context, env engine.Envelope) error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls == 1 {
					return errors.New("shipping provider: 503 service unavailable")
				}
				return nil
			}))
			env := h.envelope()
			h.send(env, h.q.URL)
			h.waitFor("the queue to drain", func() bool { return h.depth(h.q.URL) == 0 })
			mu.Lock()
			n := calls
			mu.Unlock()
			r := h.row(env.ID, "book_shipment")
			want, wantStatus := 2, inbox.Completed
			if mode == modeSeed {
				want, wantStatus = 1, inbox.Dead
			}
			if n != want || r.Status != wantStatus {
				t.Errorf("%s: handler calls = %d, row status %q; want %d and %q", mode, n, r.Status, want, wantStatus)
			}
		})
	}
}

// TestRedriveOfDeadWork: a handler fails and its row goes dead; the
// handler is fixed and the operator moves the event back from the DLQ.
// The seed redrive moves the message, but the dead row refuses the claim,
// so the fixed handler never runs. Bowline's redrive step (ReleaseDead
// before the move, as engine/redrive does) lets it run.
func TestRedriveOfDeadWork(t *testing.T) {
	for _, mode := range []string{modeSeed, modeBowline} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t)
			var mu sync.Mutex
			fixed, runs := false, 0
			h.start(mode, durable("book_shipment", func(ctx context.Context, env engine.Envelope) error {
				mu.Lock()
				defer mu.Unlock()
				if !fixed {
					return fmt.Errorf("bad address: %w", worker.ErrTerminal)
				}
				runs++
				return nil
			}))
			env := h.envelope()
			h.send(env, h.q.URL)
			h.waitFor("the row to go dead", func() bool { return h.row(env.ID, "book_shipment").Status == inbox.Dead })
			h.waitFor("the queue to drain", func() bool { return h.depth(h.q.URL) == 0 })
			mu.Lock()
			fixed = true
			mu.Unlock()
			if mode == modeSeed {
				// The seed consumer deletes a dead message; the runbook
				// starts from the event in the DLQ (where SQS puts a
				// message after maxReceiveCount failed receives).
				h.send(env, h.q.DLQURL)
				moved, err := seedinbox.Redrive(h.ctx, h.sqs, h.q.DLQURL, h.q.URL)
				if err != nil || len(moved) != 1 {
					t.Fatalf("Redrive = %v, %v; want one message moved", moved, err)
				}
			} else {
				// Bowline's worker forwarded the dead message to the DLQ.
				if err := h.st.inbox.ReleaseDead(h.ctx, env.ID, "book_shipment"); err != nil {
					t.Fatal(err)
				}
				if _, err := seedinbox.Redrive(h.ctx, h.sqs, h.q.DLQURL, h.q.URL); err != nil {
					t.Fatal(err)
				}
			}
			h.waitFor("the queue to drain after the redrive", func() bool {
				return h.depth(h.q.URL) == 0 && h.depth(h.q.DLQURL) == 0
			})
			mu.Lock()
			n := runs
			mu.Unlock()
			r := h.row(env.ID, "book_shipment")
			want, wantStatus := 1, inbox.Completed
			if mode == modeSeed {
				want, wantStatus = 0, inbox.Dead
			}
			if n != want || r.Status != wantStatus {
				t.Errorf("%s: fixed handler runs = %d, row status %q; want %d and %q", mode, n, r.Status, want, wantStatus)
			}
		})
	}
}
