package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/deploy/cfn/iamtest"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/awscalls"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestBowlineCommands runs the end-to-end scenarios with the bowline
// commands as processes, one after the other (they share the stack's
// provisioned queues). Every AWS call those processes make is recorded and,
// at the end, checked against the role that makes it in AWS (iamtest,
// docs/iam.md).
func TestBowlineCommands(t *testing.T) {
	testkit.Long(t, "runs the bowline commands as processes")
	iamtest.Record(t)
	bin := bowlineBin(t)
	t.Run("api, relay and worker as processes", func(t *testing.T) { commandsAsProcesses(t, bin) })
	t.Run("relay and worker deliver", func(t *testing.T) { relayAndWorkerDeliver(t, bin) })
	t.Run("runbook redrive --all", func(t *testing.T) { runbookRedriveAll(t, bin) })
}

// runbookRedriveAll is the runbook as an operator runs it, on a stack of
// its own (provisioned tables and events.fifo / events-dlq.fifo under a
// fresh BOWLINE_STACK, so no long poll left on the emulator by an earlier
// scenario's worker can take its message): a handler
// exhausts the queue's maxReceiveCount and dies; the handler is fixed;
// `bowline redrive --all` moves the event back; the handler runs and
// completes, within five minutes of the original send.
func runbookRedriveAll(t *testing.T, bin string) {
	ctx := enginetest.Ctx(t)
	cfg := lstest.AWSConfig(t)
	names, err := resources.New(lstest.Names(t).Stack + "rb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provision.Provision(ctx, cfg, names, provision.Options{Parts: []provision.Part{provision.Tables, provision.Queues}}); err != nil {
		t.Fatalf("provision %s: %v", names.Stack, err)
	}
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	sq := sqs.NewFromConfig(cfg)
	qURL, dlqURL := url(ctx, t, sq, names.EventsQueue()), url(ctx, t, sq, names.EventsDLQ())
	in, _ := inbox.New(inbox.Config{Client: ddb, Table: names.InboxTable()})
	// The worker is `bowline worker`'s engine worker with a handler the
	// test controls: its clients record its calls as the worker's (the
	// dead-lettering path the IAM check must see), the test's own do not.
	rec, err := awscalls.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	wcfg := rec.Config(cfg, awscalls.Label{Part: app.PartWorker, Stack: names.Stack})
	wddb := dynamodb.NewFromConfig(wcfg, awsenv.DynamoDBOptions)
	win, _ := inbox.New(inbox.Config{Client: wddb, Table: names.InboxTable()})
	dl, _ := deadletter.New(wddb, names.DeadLettersTable(), nil)

	var broken atomic.Bool
	var oks atomic.Int32
	broken.Store(true)
	w, err := worker.New(worker.Config{
		Queue: sqs.NewFromConfig(wcfg), QueueURL: qURL, DLQURL: dlqURL, Inbox: win, DeadLetters: dl,
		WaitTime: time.Second, Lease: 2 * time.Second, RetryDelay: time.Second, Logger: slog.New(slog.DiscardHandler),
		Subscriptions: []engine.Subscription{{Name: "shopify_mirror", Pattern: "com.payment_completed", Lane: engine.Durable,
			Handler: func(context.Context, engine.Envelope) error {
				if broken.Load() {
					return errors.New("shopify 500")
				}
				oks.Add(1)
				return nil
			}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	sent := time.Now()
	tenant := "t" + strings.ToLower(sent.Format("150405.000000"))
	tenant = strings.ReplaceAll(tenant, ".", "")
	env := enginetest.Envelope(t, tenant, "com.payment_completed", 1, nil)
	_, err = sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(qURL), MessageBody: aws.String(enginetest.Body(t, env)),
		MessageGroupId: aws.String(tenant), MessageDeduplicationId: aws.String(env.ID)})
	if err != nil {
		t.Fatal(err)
	}
	status := func() inbox.Status {
		r, _, err := in.Get(ctx, env.ID, "shopify_mirror")
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	testkit.WaitFor(t, "the event to die after maxReceiveCount receives", 90*time.Second, func() bool {
		return status() == inbox.Dead && enginetest.Depth(ctx, t, sq, dlqURL) == 1
	})
	stackEnv := append(os.Environ(), resources.StackEnv+"="+names.Stack)
	list := exec.Command(bin, "dead-letters", "--tenant", tenant)
	list.Env = stackEnv
	if out, err := testkit.ChildOutput(ctx, t, "bowline dead-letters", list); err != nil || !strings.Contains(string(out), env.ID) || !strings.Contains(string(out), "open") ||
		!strings.Contains(string(out), "shopify 500") {
		t.Errorf("bowline dead-letters --tenant %s = %q, %v; want the open letter with its error", tenant, out, err)
	}
	// The runbook's first step lists every tenant's letters.
	all := exec.Command(bin, "dead-letters", "--json")
	all.Env = stackEnv
	if out, err := testkit.ChildOutput(ctx, t, "bowline dead-letters", all); err != nil || !strings.Contains(string(out), env.ID) {
		t.Errorf("bowline dead-letters --json = %q, %v; want the letter of %s", out, err, env.ID)
	}
	broken.Store(false)

	cmd := exec.Command(bin, "redrive", "--all")
	cmd.Env = append(os.Environ(), resources.StackEnv+"="+names.Stack)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := testkit.RunChild(ctx, t, "bowline redrive", cmd); err != nil {
		t.Fatalf("bowline redrive --all: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if want := "moved " + env.ID; !strings.Contains(stdout.String(), want) || !strings.Contains(stdout.String(), "released: shopify_mirror") {
		t.Errorf("bowline redrive --all printed %q; want a line with %q and the released subscription", stdout.String(), want)
	}
	testkit.WaitFor(t, "the replay to complete", 90*time.Second, func() bool { return status() == inbox.Completed })
	if since := time.Since(sent); since >= 5*time.Minute {
		t.Fatalf("took %v; must replay inside the five-minute dedup window", since)
	}
	if n := oks.Load(); n != 1 {
		t.Errorf("successful runs = %d; want 1", n)
	}
	if n := enginetest.Depth(ctx, t, sq, dlqURL); n != 0 {
		t.Errorf("DLQ depth = %d; want 0", n)
	}
	list = exec.Command(bin, "dead-letters", "--tenant", tenant, "--redriven")
	list.Env = stackEnv
	if out, err := testkit.ChildOutput(ctx, t, "bowline dead-letters", list); err != nil || !strings.Contains(string(out), "redriven") {
		t.Errorf("bowline dead-letters --redriven = %q, %v; want the letter marked redriven", out, err)
	}
	// Usage errors name the problem and exit 2.
	bad := exec.Command(bin, "redrive")
	bad.Env = cmd.Env
	var combined bytes.Buffer
	bad.Stdout, bad.Stderr = &combined, &combined
	err = testkit.RunChild(ctx, t, "bowline redrive", bad)
	out := combined.Bytes()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "--all") {
		t.Errorf("bowline redrive (no selection) = %v, %q; want exit 2 naming --all", err, out)
	}
}

func url(ctx context.Context, t *testing.T, sq *sqs.Client, name string) string {
	t.Helper()
	out, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("queue %s: %v", name, err)
	}
	return *out.QueueUrl
}
