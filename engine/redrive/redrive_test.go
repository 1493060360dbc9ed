package redrive

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
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
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB, localstack.SQS) }

const maxReceive = 2

type fixture struct {
	t     *testing.T
	ctx   context.Context
	sqs   *sqs.Client
	q     enginetest.Queues
	inbox *inbox.Store
	dl    *deadletter.Store
	// broken makes the handler fail; runs and oks count its calls.
	broken    atomic.Bool
	runs, oks atomic.Int32
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	in, _ := inbox.New(inbox.Config{Client: ddb, Table: lstest.Names(t).InboxTable()})
	dl, _ := deadletter.New(ddb, lstest.Names(t).DeadLettersTable(), nil)
	f := &fixture{t: t, ctx: enginetest.Ctx(t), sqs: sqs.NewFromConfig(cfg), q: enginetest.FIFOQueues(t, "redrive", 3*time.Second, maxReceive), inbox: in, dl: dl}
	f.broken.Store(true)
	w, err := worker.New(worker.Config{
		Queue: f.sqs, QueueURL: f.q.URL, DLQURL: f.q.DLQURL, Inbox: in, DeadLetters: dl,
		MaxReceiveCount: maxReceive, MaxAttempts: maxReceive, RetryBackoffBase: 100 * time.Millisecond, WaitTime: time.Second, Lease: time.Second, Heartbeat: 300 * time.Millisecond, RetryDelay: time.Second,
		Logger: slog.New(slog.DiscardHandler),
		Subscriptions: []engine.Subscription{{Name: "notify_buyer", Pattern: "com.*", Lane: engine.Durable, Handler: func(context.Context, engine.Envelope) error {
			f.runs.Add(1)
			if f.broken.Load() {
				return errors.New("template missing")
			}
			f.oks.Add(1)
			return nil
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

func (f *fixture) redriver() *Redriver {
	r, err := New(Config{Queue: f.sqs, QueueURL: f.q.URL, DLQURL: f.q.DLQURL, Inbox: f.inbox, DeadLetters: f.dl, Hold: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) sendDying(tenant string) engine.Envelope {
	f.t.Helper()
	env := enginetest.Envelope(f.t, tenant, "com.payment_completed", 1, nil)
	_, err := f.sqs.SendMessage(f.ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(f.q.URL), MessageBody: aws.String(enginetest.Body(f.t, env)),
		MessageGroupId: aws.String(tenant), MessageDeduplicationId: aws.String(env.ID),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return env
}

func (f *fixture) status(env engine.Envelope) inbox.Status {
	r, _, err := f.inbox.Get(f.ctx, env.ID, "notify_buyer")
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Status
}

func (f *fixture) waitFor(what string, cond func() bool) {
	f.t.Helper()
	testkit.WaitFor(f.t, what, 60*time.Second, cond)
}

func tenant() string { return "t" + strings.ToLower(ulid.Make().String()) }

// TestRunbookRedriveAfterFix: a handler dies on every receive; the event
// ends dead and in the DLQ; the handler is fixed; redrive --all moves it
// back and the handler runs and completes. All of it happens within five
// minutes of the original send, so the redriven copy only arrives because
// it carries a fresh deduplication id.
func TestRunbookRedriveAfterFix(t *testing.T) {
	f := newFixture(t)
	sent := time.Now()
	env := f.sendDying(tenant())
	f.waitFor("the event to die", func() bool { return f.status(env) == inbox.Dead })
	f.waitFor("the DLQ to hold it", func() bool {
		return enginetest.Depth(f.ctx, t, f.sqs, f.q.URL) == 0 && enginetest.Depth(f.ctx, t, f.sqs, f.q.DLQURL) == 1
	})
	f.broken.Store(false) // the fix is deployed
	res, err := f.redriver().Run(f.ctx, Options{All: true})
	if err != nil {
		t.Fatalf("Run(--all): %v", err)
	}
	if len(res.Moved) != 1 || res.Moved[0].EventID != env.ID || len(res.Moved[0].Released) != 1 || res.Moved[0].Released[0] != "notify_buyer" {
		t.Fatalf("moved = %+v; want event %s with notify_buyer released", res.Moved, env.ID)
	}
	f.waitFor("the replay to complete", func() bool { return f.status(env) == inbox.Completed })
	if since := time.Since(sent); since >= 5*time.Minute {
		t.Fatalf("test took %v; it must replay inside the 5 minute dedup window to prove the fresh id", since)
	}
	if got := f.oks.Load(); got != 1 {
		t.Errorf("successful runs = %d; want 1", got)
	}
	if got := f.runs.Load(); got != maxReceive+1 {
		t.Errorf("handler runs = %d; want %d failures then 1 success", got, maxReceive+1)
	}
	if n := enginetest.Depth(f.ctx, t, f.sqs, f.q.DLQURL); n != 0 {
		t.Errorf("DLQ depth after redrive = %d; want 0", n)
	}
	letters, _ := f.dl.ForEvent(f.ctx, env.Tenant, env.ID)
	if len(letters) != 1 || letters[0].Open() {
		t.Errorf("letters = %+v; want one, marked redriven", letters)
	}
}

// TestRedriveSelectsAndDryRuns: a dry run changes nothing; --event moves
// only the named event and reports the other as skipped.
func TestRedriveSelectsAndDryRuns(t *testing.T) {
	f := newFixture(t)
	a, b := f.sendDying(tenant()), f.sendDying(tenant())
	f.waitFor("both in the DLQ", func() bool {
		return f.status(a) == inbox.Dead && f.status(b) == inbox.Dead && enginetest.Depth(f.ctx, t, f.sqs, f.q.DLQURL) == 2
	})
	f.broken.Store(false)
	dry, err := f.redriver().Run(f.ctx, Options{All: true, DryRun: true})
	if err != nil || len(dry.Moved) != 2 || !dry.DryRun {
		t.Fatalf("dry run = %+v, %v; want 2 would-move", dry, err)
	}
	if f.status(a) != inbox.Dead || f.status(b) != inbox.Dead {
		t.Fatal("dry run changed inbox rows")
	}
	f.waitFor("dry-run messages visible again", func() bool { return enginetest.Depth(f.ctx, t, f.sqs, f.q.DLQURL) == 2 })
	res, err := f.redriver().Run(f.ctx, Options{EventIDs: []string{a.ID, "01NOSUCHEVENT"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Moved) != 1 || res.Moved[0].EventID != a.ID {
		t.Errorf("moved = %+v; want only %s", res.Moved, a.ID)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].EventID != b.ID || res.Skipped[0].Reason != "not selected" {
		t.Errorf("skipped = %+v; want %s, not selected", res.Skipped, b.ID)
	}
	if len(res.NotFound) != 1 || res.NotFound[0] != "01NOSUCHEVENT" {
		t.Errorf("not found = %v; want [01NOSUCHEVENT]", res.NotFound)
	}
	f.waitFor("a to complete", func() bool { return f.status(a) == inbox.Completed })
	if f.status(b) != inbox.Dead {
		t.Errorf("b = %s; want still dead", f.status(b))
	}
	if _, err := f.redriver().Run(f.ctx, Options{}); !errors.Is(err, ErrNothingSelected) {
		t.Errorf("Run with no selection = %v; want ErrNothingSelected", err)
	}
}
