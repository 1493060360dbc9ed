// Command delivery is the delivery section of scripts/bench. It measures
// delivery through the relay and the durable worker on the local stack:
// events per second from event rows in the events table, through the events
// pipe and events.fifo, to four subscriptions each completed through the
// inbox, and the DynamoDB and SQS calls the relay and worker make per
// delivered event. Beside it, in the same run and on the same queue, it
// measures the raw receive+delete rate, the ceiling any consumer of that
// queue has, and reports the pipeline's rate as a share of it.
//
// Proving ground: a measurement of the product, never linked into it
// (docs/README.md, "The proving ground").
//
//	go run ./engine/bench/delivery [--events 400] [--tenants 20] [--pollers 4] [--json]
//	go run ./engine/bench/delivery --flood 3000 [--pollers 4] [--json]
//	go run ./engine/bench/delivery --failing-head [--events 400] [--tenants 20] [--head-failures 4] [--second-failures 1] [--retry-spacing 1s] [--json]
//
// --failing-head measures instead delivery under failing heads, retry in
// place beside the old give-back rule (failinghead.go); --flood N another
// tenant's event latency while one tenant floods (flood.go).
//
// Latency is from the relay's send of an event's message (just before its
// SendMessageBatch call) to the last of its four handlers done. All events
// are in the table before the relay starts, so this is latency under a
// backlog the size of --events, not at rest; the e2e section measures the
// latter. The worker's own DynamoDB calls are also counted apart, per
// subscription per event: the floor is 2 (claim and complete).
//
// It starts its own emulators (internal/localstack), so numbers reflect the
// local stand-ins (DynamoDB Local, fauxqs), not AWS; fauxqs hands out one
// message per group per receive, so the run spreads events over --tenants
// groups.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/latency"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Result is the benchmark's output (--json).
type Result struct {
	Events        int `json:"events"`
	Tenants       int `json:"tenants"`
	Subscriptions int `json:"subscriptions"`
	Pollers       int `json:"pollers"`
	// RawReceiveDeletePerSec is messages/s for receive(10)+delete alone,
	// one DeleteMessage per message: the baseline of the target.
	RawReceiveDeletePerSec float64 `json:"raw_receive_delete_per_sec"`
	// RawBatchedPerSec is the same with one DeleteMessageBatch per
	// receive: the queue's real ceiling.
	RawBatchedPerSec float64 `json:"raw_receive_delete_batch_per_sec"`
	// EventsPerSec is events/s from first relay start to the last of
	// Events x Subscriptions completions.
	EventsPerSec float64 `json:"events_per_sec"`
	// HandlerRunsPerSec is EventsPerSec x Subscriptions.
	HandlerRunsPerSec float64 `json:"handler_runs_per_sec"`
	// Calls per delivered event made by the relay and the worker.
	DynamoDBCallsPerEvent float64            `json:"dynamodb_calls_per_event"`
	SQSCallsPerEvent      float64            `json:"sqs_calls_per_event"`
	CallsByOperation      map[string]float64 `json:"calls_per_event_by_operation"`
	// WorkerDynamoDBCallsPerSubscription is the worker's DynamoDB calls
	// per subscription per event (claim + complete = 2).
	WorkerDynamoDBCallsPerSubscription float64 `json:"worker_dynamodb_calls_per_subscription"`
	// ShareOfRaw is EventsPerSec / RawReceiveDeletePerSec.
	ShareOfRaw float64 `json:"share_of_raw"`
	// WorkerOnlyPerSec is events/s of the worker alone on the same queue
	// (messages sent straight to it, in-memory inbox): the worker's own
	// cost against the batched raw rate, WorkerOnlyShareOfRaw.
	WorkerOnlyPerSec     float64 `json:"worker_only_events_per_sec"`
	WorkerOnlyShareOfRaw float64 `json:"worker_only_share_of_raw"`
	// InboxCeilingPerSec is events/s of claim + complete of four
	// subscriptions through the inbox on the same DynamoDB, without a
	// queue; ShareOfCeiling is EventsPerSec over the lower of it and the
	// raw rate.
	InboxCeilingPerSec float64 `json:"inbox_ceiling_events_per_sec"`
	ShareOfCeiling     float64 `json:"share_of_ceiling"`
	// Latency is from the relay's send to the event's last handler done.
	Latency latency.Summary `json:"latency_ms"`
	Seconds float64         `json:"seconds"`
	// RelaySeconds is when the relay had forwarded every event.
	RelaySeconds float64 `json:"relay_seconds"`
}

// benchType is the one event type the benchmark sends; four subscriptions
// fan out on it, the shape of a paid order's fan-out in a real catalog.
const benchType = "bench.fanout"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench delivery:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench delivery", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "bench delivery: events/s through relay + worker (4 subscriptions) and API calls per event, beside raw SQS receive+delete\n\nUsage: go run ./engine/bench/delivery [flags]\n\nFlags:")
		fs.PrintDefaults()
	}
	events := fs.Int("events", 400, "events to deliver")
	tenants := fs.Int("tenants", 20, "tenants (FIFO message groups)")
	pollers := fs.Int("pollers", 4, "worker receive loops")
	asJSON := fs.Bool("json", false, "print JSON")
	failing := fs.Bool("failing-head", false, "measure delivery under failing heads instead: each tenant's first event fails, retry in place beside the old give-back rule, on the SQS FIFO double")
	headFailures := fs.Int("head-failures", 4, "with --failing-head: retryable failures of each tenant's first event (below the attempt budget, 5)")
	secondFailures := fs.Int("second-failures", 1, "with --failing-head: retryable failures of each tenant's second event")
	floodN := fs.Int("flood", 0, "measure instead another tenant's event latency while one tenant floods N events (relay + worker, local stack), beside the same event at rest")
	spacing := fs.Duration("retry-spacing", time.Second, "with --failing-head: time between attempts, for both consumers (whole seconds)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *events <= 0 || *tenants <= 0 || *pollers <= 0 {
		return fmt.Errorf("--events, --tenants and --pollers must be positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	if *floodN > 0 {
		return floodMode(ctx, stdout, *floodN, *pollers, *asJSON)
	}
	if *failing {
		if *headFailures < 0 || *secondFailures < 0 || *spacing < time.Second || *spacing%time.Second != 0 {
			return fmt.Errorf("--head-failures and --second-failures must not be negative, --retry-spacing whole seconds of at least 1s")
		}
		return failingHeadMode(ctx, stdout, *events, *tenants, *headFailures, *secondFailures, *spacing, *asJSON)
	}

	stack, err := localstack.StartScratch(ctx, localstack.Config{Services: []localstack.Service{localstack.DynamoDB, localstack.SQS}}, "bench")
	if err != nil {
		return err
	}
	defer stack.Close()
	names, plain := stack.Names, stack.AWS
	calls := &callCounter{n: map[string]int{}}
	counted := countingConfig(plain, calls, "")
	workerCounted := countingConfig(plain, calls, "worker ")
	b := &bench{
		names: names, events: *events, tenants: *tenants, pollers: *pollers,
		hddb: dynamodb.NewFromConfig(plain, awsenv.DynamoDBOptions), hsqs: sqs.NewFromConfig(plain),
		ddb: dynamodb.NewFromConfig(counted, awsenv.DynamoDBOptions), sqs: sqs.NewFromConfig(counted),
		wddb: dynamodb.NewFromConfig(workerCounted, awsenv.DynamoDBOptions), wsqs: sqs.NewFromConfig(workerCounted),
		streams: dynamodbstreams.NewFromConfig(counted), calls: calls,
	}
	if b.queue, err = queueURL(ctx, b.hsqs, names.EventsQueue()); err != nil {
		return err
	}
	if b.dlq, err = queueURL(ctx, b.hsqs, names.EventsDLQ()); err != nil {
		return err
	}
	res := Result{Events: *events, Tenants: *tenants, Subscriptions: 4, Pollers: *pollers}
	if res.RawReceiveDeletePerSec, err = b.raw(ctx, false); err != nil {
		return err
	}
	if res.RawBatchedPerSec, err = b.raw(ctx, true); err != nil {
		return err
	}
	if res.WorkerOnlyPerSec, err = b.workerOnly(ctx); err != nil {
		return err
	}
	if err := b.pipeline(ctx, &res); err != nil {
		return err
	}
	// After the pipeline, so DynamoDB Local's JIT is as warm as it was
	// for the pipeline.
	if res.InboxCeilingPerSec, err = b.inboxCeiling(ctx); err != nil {
		return err
	}
	if res.RawReceiveDeletePerSec > 0 {
		res.ShareOfRaw = res.EventsPerSec / res.RawReceiveDeletePerSec
	}
	if res.RawBatchedPerSec > 0 {
		res.WorkerOnlyShareOfRaw = res.WorkerOnlyPerSec / res.RawBatchedPerSec
	}
	if c := min(res.RawReceiveDeletePerSec, res.InboxCeilingPerSec); c > 0 {
		res.ShareOfCeiling = res.EventsPerSec / c
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "bench delivery: %d events over %d tenants, 4 durable subscriptions, %d pollers (local stack)\n", res.Events, res.Tenants, res.Pollers)
	fmt.Fprintf(stdout, "  raw receive+delete      %8.1f msg/s\n", res.RawReceiveDeletePerSec)
	fmt.Fprintf(stdout, "  raw, batched deletes    %8.1f msg/s\n", res.RawBatchedPerSec)
	fmt.Fprintf(stdout, "  worker, in-memory inbox %8.1f events/s  (%.0f %% of raw with batched deletes)\n", res.WorkerOnlyPerSec, 100*res.WorkerOnlyShareOfRaw)
	fmt.Fprintf(stdout, "  inbox alone (DynamoDB)  %8.1f events/s  (claim + complete x 4, no queue)\n", res.InboxCeilingPerSec)
	fmt.Fprintf(stdout, "  relay + worker          %8.1f events/s  (%.1f handler runs/s, %.1fs)\n", res.EventsPerSec, res.HandlerRunsPerSec, res.Seconds)
	fmt.Fprintf(stdout, "  share of raw            %8.0f %%  (of the lower ceiling: %.0f %%)\n", 100*res.ShareOfRaw, 100*res.ShareOfCeiling)
	fmt.Fprintf(stdout, "  send -> last handler    p50 %.0f ms  p99 %.0f ms  max %.0f ms  (%d events, backlog of %d)\n", res.Latency.P50, res.Latency.P99, res.Latency.Max, res.Latency.N, res.Events)
	fmt.Fprintf(stdout, "  relay forwarded all in  %8.1fs\n", res.RelaySeconds)
	fmt.Fprintf(stdout, "  calls per event         %8.2f DynamoDB  %6.2f SQS\n", res.DynamoDBCallsPerEvent, res.SQSCallsPerEvent)
	fmt.Fprintf(stdout, "  worker DynamoDB calls   %8.2f per subscription per event (claim + complete = 2)\n", res.WorkerDynamoDBCallsPerSubscription)
	ops := make([]string, 0, len(res.CallsByOperation))
	for op := range res.CallsByOperation {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		fmt.Fprintf(stdout, "    %-34s %6.2f\n", op, res.CallsByOperation[op])
	}
	return nil
}

func floodMode(ctx context.Context, stdout io.Writer, n, pollers int, asJSON bool) error {
	stack, err := localstack.StartScratch(ctx, localstack.Config{Services: []localstack.Service{localstack.DynamoDB, localstack.SQS}}, "bench")
	if err != nil {
		return err
	}
	defer stack.Close()
	res, err := flood(ctx, stack.Names, stack.AWS, n, pollers)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "bench delivery --flood %d: another tenant's event, write -> handler done, relay + worker (%d pollers, local stack)\n", n, pollers)
	fmt.Fprintf(stdout, "  at rest                 p50 %6.0f ms  max %6.0f ms  (%d events)\n", res.AtRest.P50, res.AtRest.Max, res.AtRest.N)
	fmt.Fprintf(stdout, "  during the flood        p50 %6.0f ms  max %6.0f ms  (%d events)\n", res.DuringFlood.P50, res.DuringFlood.Max, res.DuringFlood.N)
	fmt.Fprintf(stdout, "  the flood's own events  p50 %6.0f ms  p99 %6.0f ms  (%d events, all handled %.1fs after the first write)\n", res.FloodEvents.P50, res.FloodEvents.P99, res.FloodEvents.N, res.FloodSeconds)
	return nil
}

func failingHeadMode(ctx context.Context, stdout io.Writer, events, tenants, headFailures, secondFailures int, spacing time.Duration, asJSON bool) error {
	stack, err := localstack.StartScratch(ctx, localstack.Config{Services: []localstack.Service{localstack.DynamoDB}}, "bench")
	if err != nil {
		return err
	}
	defer stack.Close()
	ddb := dynamodb.NewFromConfig(stack.AWS, awsenv.DynamoDBOptions)
	res, err := failingHead(ctx, stack.Names, ddb, ddb, events, tenants, headFailures, secondFailures, spacing)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "bench delivery --failing-head: %d events over %d tenants (%d per group); each tenant's event 1 fails %d times, event 2 %d; %v between attempts; SQS FIFO double, inbox on DynamoDB Local\n",
		res.Events, res.Tenants, max(1, events/tenants), res.HeadFailures, res.SecondFailures, spacing)
	fmt.Fprintf(stdout, "  %-34s %14s %14s\n", "", "retry in place", "give back")
	row := func(name string, f func(FailingHeadRun) string) {
		fmt.Fprintf(stdout, "  %-34s %14s %14s\n", name, f(res.RetryInPlace), f(res.GiveBack))
	}
	row("queue maxReceiveCount", func(r FailingHeadRun) string { return fmt.Sprint(r.MaxReceiveCount) })
	row("send -> handler done p50 (ms)", func(r FailingHeadRun) string { return fmt.Sprintf("%.0f", r.Latency.P50) })
	row("send -> handler done p99 (ms)", func(r FailingHeadRun) string { return fmt.Sprintf("%.0f", r.Latency.P99) })
	row("receives per event", func(r FailingHeadRun) string { return fmt.Sprintf("%.2f", r.ReceivesPerEvent) })
	row("receives per waiting event", func(r FailingHeadRun) string { return fmt.Sprintf("%.2f", r.WaitingReceives) })
	row("ReceiveMessage calls", func(r FailingHeadRun) string { return fmt.Sprint(r.ReceiveCalls) })
	row("events dead / in the DLQ", func(r FailingHeadRun) string { return fmt.Sprintf("%d / %d", r.Dead, r.InDLQ) })
	row("all done in (s)", func(r FailingHeadRun) string { return fmt.Sprintf("%.1f", r.Seconds) })
	return nil
}

type bench struct {
	names                    resources.Names
	events, tenants, pollers int
	hddb, ddb, wddb          *dynamodb.Client // h*: the harness's own, uncounted; w*: the worker's
	hsqs, sqs, wsqs          *sqs.Client
	streams                  *dynamodbstreams.Client
	queue, dlq               string
	calls                    *callCounter
}

// raw sends events messages and times receive+delete of all of them with
// the same number of pollers, one DeleteMessage per message (batched:
// one DeleteMessageBatch per receive).
func (b *bench) raw(ctx context.Context, batched bool) (float64, error) {
	run := "raw"
	if batched {
		run = "rawbatch"
	}
	for i := 0; i < b.events; i += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, b.events); j++ {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
				Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(`{"raw":true}`),
				MessageGroupId: aws.String(fmt.Sprintf("g%d", j%b.tenants)), MessageDeduplicationId: aws.String(fmt.Sprintf("%s-%d", run, j)),
			})
		}
		if _, err := b.hsqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(b.queue), Entries: entries}); err != nil {
			return 0, fmt.Errorf("raw send: %w", err)
		}
	}
	var got atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for range b.pollers {
		wg.Go(func() {
			for got.Load() < int64(b.events) && ctx.Err() == nil {
				out, err := b.hsqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(b.queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				if batched && len(out.Messages) > 0 {
					in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(b.queue)}
					for i, m := range out.Messages {
						in.Entries = append(in.Entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
					}
					if res, err := b.hsqs.DeleteMessageBatch(ctx, in); err != nil || len(res.Failed) > 0 {
						once.Do(func() { firstErr = fmt.Errorf("delete batch: %v (%d failed)", err, len(res.Failed)) })
						return
					}
					got.Add(int64(len(out.Messages)))
					continue
				}
				for _, m := range out.Messages {
					if _, err := b.hsqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(b.queue), ReceiptHandle: m.ReceiptHandle}); err != nil {
						once.Do(func() { firstErr = err })
						return
					}
					got.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, fmt.Errorf("raw receive: %w", firstErr)
	}
	return float64(b.events) / time.Since(start).Seconds(), nil
}

// pipeline writes the event rows, then starts the relay and the worker and
// times until every subscription completed every event.
func (b *bench) pipeline(ctx context.Context, res *Result) error {
	if err := b.writeEvents(ctx); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	in, err := inbox.New(inbox.Config{Client: b.wddb, Table: b.names.InboxTable()})
	if err != nil {
		return err
	}
	dl, err := deadletter.New(b.wddb, b.names.DeadLettersTable(), nil)
	if err != nil {
		return err
	}
	var relayDone atomic.Value
	var done atomic.Int64
	target := int64(b.events * 4)
	finished := make(chan struct{})
	clock := &sendClock{QueueAPI: b.sqs, sent: map[string]time.Time{}, handled: map[string]int{}}
	var subs []engine.Subscription
	for _, name := range []string{"fanout_a", "fanout_b", "fanout_c", "fanout_d"} {
		subs = append(subs, engine.Subscription{Name: name, Pattern: benchType, Lane: engine.Durable,
			Handler: func(_ context.Context, env engine.Envelope) error {
				clock.handlerDone(env.ID, 4)
				if done.Add(1) == target {
					close(finished)
				}
				return nil
			}})
	}
	w, err := worker.New(worker.Config{Queue: b.wsqs, QueueURL: b.queue, DLQURL: b.dlq, Inbox: in, DeadLetters: dl,
		Subscriptions: subs, Pollers: b.pollers, WaitTime: time.Second, Logger: log})
	if err != nil {
		return err
	}
	r, err := relay.New(relay.Config{Pipe: relay.EventsPipe, Streams: b.streams, Table: b.names.EventsTable(), Tables: b.ddb,
		Queue: clock, QueueURL: b.queue, Checkpoints: b.ddb, CheckpointTable: b.names.InboxTable(),
		PollInterval: 50 * time.Millisecond, Logger: log, Observer: &relayWatch{target: int64(b.events), at: &relayDone}})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	b.calls.reset()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(runCtx) })
	wg.Go(func() { _ = w.Run(runCtx) })
	select {
	case <-finished:
	case <-ctx.Done():
		stop()
		wg.Wait()
		return fmt.Errorf("pipeline: %d of %d handler runs before %w", done.Load(), target, ctx.Err())
	}
	elapsed := time.Since(start)
	if t, ok := relayDone.Load().(time.Time); ok {
		res.RelaySeconds = t.Sub(start).Seconds()
	}
	// Let the last deletes land before reading the counters.
	for b.depth(ctx) > 0 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	snap := b.calls.snapshot()
	stop()
	wg.Wait()
	res.Seconds = elapsed.Seconds()
	res.EventsPerSec = float64(b.events) / elapsed.Seconds()
	res.HandlerRunsPerSec = res.EventsPerSec * 4
	res.Latency = latency.Summarize(clock.latencies())
	res.CallsByOperation = map[string]float64{}
	for k, n := range snap {
		per := float64(n) / float64(b.events)
		res.CallsByOperation[k] = per
		op := strings.TrimPrefix(k, "worker ")
		switch {
		case strings.HasPrefix(op, "SQS."):
			res.SQSCallsPerEvent += per
		default:
			res.DynamoDBCallsPerEvent += per
			if op != k && strings.HasPrefix(op, "DynamoDB.") {
				res.WorkerDynamoDBCallsPerSubscription += per / 4
			}
		}
	}
	return nil
}

// sendClock is the relay's queue: it notes when each event's message is
// sent (its deduplication id is the event id), and the handlers note when
// each event's last subscription is done.
type sendClock struct {
	relay.QueueAPI
	mu      sync.Mutex
	sent    map[string]time.Time
	handled map[string]int
	lat     []time.Duration
}

func (c *sendClock) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	now := time.Now()
	c.mu.Lock()
	for _, e := range in.Entries {
		id := aws.ToString(e.MessageDeduplicationId)
		if _, ok := c.sent[id]; !ok {
			c.sent[id] = now
		}
	}
	c.mu.Unlock()
	return c.QueueAPI.SendMessageBatch(ctx, in, opts...)
}

func (c *sendClock) handlerDone(eventID string, subs int) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handled[eventID]++
	if c.handled[eventID] == subs {
		if at, ok := c.sent[eventID]; ok {
			c.lat = append(c.lat, now.Sub(at))
		}
	}
}

func (c *sendClock) latencies() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.lat...)
}

func (b *bench) writeEvents(ctx context.Context) error {
	var reqs []types.WriteRequest
	flush := func() error {
		for len(reqs) > 0 {
			out, err := b.hddb.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{b.names.EventsTable(): reqs}})
			if err != nil {
				return fmt.Errorf("write events: %w", err)
			}
			reqs = out.UnprocessedItems[b.names.EventsTable()]
		}
		return nil
	}
	seq := map[string]uint64{}
	for i := range b.events {
		tenant := fmt.Sprintf("bench%02d", i%b.tenants)
		seq[tenant]++
		env := engine.Envelope{ID: ulid.Make().String(), Type: benchType, Tenant: tenant, Actor: engine.DefaultActor,
			OccurredAt: time.Now().UTC(), Payload: map[string]any{"order_id": fmt.Sprint(i), "amount_cents": 4999.0}, Seq: seq[tenant]}
		env.CorrelationID = env.ID
		if err := engine.Seal(&env, engine.Genesis); err != nil {
			return err
		}
		item, err := engine.EventItem(env)
		if err != nil {
			return err
		}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		if len(reqs) == 25 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

func (b *bench) depth(ctx context.Context) int {
	out, err := b.hsqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(b.queue), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return 0
	}
	var n, m int
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessages"], &n)
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessagesNotVisible"], &m)
	return n + m
}

func queueURL(ctx context.Context, c *sqs.Client, name string) (string, error) {
	out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("queue %s: %w", name, err)
	}
	return *out.QueueUrl, nil
}

// callCounter counts SDK operations by "Service.Operation".
type callCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounter) add(k string) { c.mu.Lock(); c.n[k]++; c.mu.Unlock() }
func (c *callCounter) reset()       { c.mu.Lock(); c.n = map[string]int{}; c.mu.Unlock() }
func (c *callCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// countingConfig returns a copy of cfg whose clients count every operation
// they start in c, under prefix + "Service.Operation" (retries are not
// counted twice).
func countingConfig(cfg aws.Config, c *callCounter, prefix string) aws.Config {
	cfg = cfg.Copy()
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("bench-delivery-count",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.add(prefix + awsmiddleware.GetServiceID(ctx) + "." + awsmiddleware.GetOperationName(ctx))
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
	return cfg
}

// relayWatch notes when the relay has forwarded target messages.
type relayWatch struct {
	relay.NopObserver
	n, target int64
	at        *atomic.Value
}

func (r *relayWatch) Forwarded(n int) {
	if atomic.AddInt64(&r.n, int64(n)) >= r.target {
		r.at.CompareAndSwap(nil, time.Now())
	}
}
