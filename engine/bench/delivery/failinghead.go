package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/ddbjson"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/latency"
	"github.com/bowline-iot/bowline/internal/resources"
)

// The failing-head mode (--failing-head): every tenant's first event fails
// --head-failures times with a retryable error while the rest of its
// group waits behind it (--events / --tenants per group), and its second
// event fails --second-failures times (a blip; the reproduction
// had one). It runs on the SQS FIFO double (engine/enginetest.FIFO: up to
// ten messages of a group per receive, receive counts and redrive as SQS
// documents them; fauxqs hands out one message per group, which hides the
// difference), with the inbox and dead letters on DynamoDB Local, twice
// side by side on the same load:
//
//   - retry in place: engine/worker as it is, attempts counted on the
//     inbox row (5), the queue's maxReceiveCount 10 (the stack's);
//   - give back: the worker's rule before retry in place (a failed
//     message goes back with a retry delay and the rest of its lane at
//     once, attempts are receives), maxReceiveCount 5, the stack's then;
//     giveBackConsumer models it.
//
// Both get the same attempt budget (5) and the same spacing between
// attempts (--retry-spacing: the worker's backoff base and cap, the give
// back's visibility), so only the mechanism differs.

// FailingHeadResult is the failing-head mode's output (--json).
type FailingHeadResult struct {
	Events         int     `json:"events"`
	Tenants        int     `json:"tenants"`
	HeadFailures   int     `json:"head_failures"`
	SecondFailures int     `json:"second_failures"`
	RetrySpacingS  float64 `json:"retry_spacing_s"`
	// RetryInPlace and GiveBack are the two consumers' figures.
	RetryInPlace FailingHeadRun `json:"retry_in_place"`
	GiveBack     FailingHeadRun `json:"give_back"`
}

// FailingHeadRun is one consumer's figures under the failing heads.
type FailingHeadRun struct {
	MaxReceiveCount int `json:"max_receive_count"`
	// Latency is from the send (all events at once) to each event's
	// handler success; dead events have none.
	Latency latency.Summary `json:"latency_ms"`
	// ReceivesPerEvent is the messages' receive counts summed, over the
	// events; WaitingReceives is the same for the events behind each
	// head only (neither failing).
	ReceivesPerEvent float64 `json:"receives_per_event"`
	WaitingReceives  float64 `json:"waiting_receives_per_event"`
	ReceiveCalls     int     `json:"receive_calls"`
	// Dead counts events dead-lettered; InDLQ the messages in the DLQ.
	Dead    int     `json:"dead"`
	InDLQ   int     `json:"in_dlq"`
	Seconds float64 `json:"seconds"`
}

const (
	fhMaxAttempts     = 5
	fhOldMaxReceive   = 5                               // the stack's maxReceiveCount when it was the budget
	fhStackMaxReceive = resources.EventsMaxReceiveCount // the stack's today
	fhSubscription    = "bench_failing"
)

// failingHead runs both consumers on the same load.
func failingHead(ctx context.Context, names resources.Names, ddb inbox.DynamoAPI, dlDB deadletter.DynamoAPI, events, tenants, headFailures, secondFailures int, spacing time.Duration) (FailingHeadResult, error) {
	res := FailingHeadResult{Events: events, Tenants: tenants, HeadFailures: headFailures, SecondFailures: secondFailures, RetrySpacingS: spacing.Seconds()}
	if headFailures >= fhMaxAttempts || secondFailures >= fhMaxAttempts {
		return res, fmt.Errorf("--head-failures %d and --second-failures %d must be below the attempt budget %d", headFailures, secondFailures, fhMaxAttempts)
	}
	in, err := inbox.New(inbox.Config{Client: ddb, Table: names.InboxTable()})
	if err != nil {
		return res, err
	}
	dl, err := deadletter.New(dlDB, names.DeadLettersTable(), nil)
	if err != nil {
		return res, err
	}
	var runErr error
	res.RetryInPlace, runErr = runFailingHead(ctx, "inplace", fhStackMaxReceive, events, tenants, headFailures, secondFailures,
		func(ctx context.Context, q *enginetest.FIFO, h engine.Handler) error {
			w, err := worker.New(worker.Config{Queue: q, QueueURL: q.URL, DLQURL: q.DLQURL, Inbox: in, DeadLetters: dl,
				Subscriptions:   []engine.Subscription{{Name: fhSubscription, Pattern: benchType, Lane: engine.Durable, Handler: h}},
				MaxReceiveCount: fhStackMaxReceive, MaxAttempts: fhMaxAttempts, RetryBackoffBase: spacing, RetryBackoffMax: spacing,
				WaitTime: time.Second, Lease: 10 * time.Second, Logger: quiet()})
			if err != nil {
				return err
			}
			return w.Run(ctx)
		})
	if runErr != nil {
		return res, fmt.Errorf("retry in place: %w", runErr)
	}
	res.GiveBack, runErr = runFailingHead(ctx, "giveback", fhOldMaxReceive, events, tenants, headFailures, secondFailures,
		func(ctx context.Context, q *enginetest.FIFO, h engine.Handler) error {
			c := &giveBackConsumer{q: q, in: in, dl: dl, handler: h, maxReceive: fhOldMaxReceive, retryDelay: spacing, worker: "giveback-" + ulid.Make().String()}
			return c.run(ctx)
		})
	if runErr != nil {
		return res, fmt.Errorf("give back: %w", runErr)
	}
	return res, nil
}

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// runFailingHead sends the load to a new FIFO double, runs consume on it
// until every event is completed or dead, and reads the figures.
func runFailingHead(ctx context.Context, run string, maxReceive, events, tenants, headFailures, secondFailures int,
	consume func(context.Context, *enginetest.FIFO, engine.Handler) error) (FailingHeadRun, error) {
	q := enginetest.NewFIFO(enginetest.FIFOConfig{Name: run, Visibility: 30 * time.Second, MaxReceiveCount: maxReceive})
	out := FailingHeadRun{MaxReceiveCount: maxReceive}
	var mu sync.Mutex
	failed := map[string]int{} // event id -> failures so far
	var lat []time.Duration
	finished := 0
	var sent time.Time
	seqOf := map[string]uint64{}
	handler := func(_ context.Context, env engine.Envelope) error {
		mu.Lock()
		defer mu.Unlock()
		want := 0
		switch env.Seq {
		case 1:
			want = headFailures
		case 2:
			want = secondFailures
		}
		if failed[env.ID] < want {
			failed[env.ID]++
			return fmt.Errorf("provider 503 (failure %d of %d)", failed[env.ID], want)
		}
		lat = append(lat, time.Since(sent))
		finished++
		return nil
	}
	perTenant := max(1, events/tenants)
	var bodies []sqstypes.SendMessageBatchRequestEntry
	for tn := range tenants {
		tenant := fmt.Sprintf("%s%02d-%s", run, tn, ulid.Make().String()[20:])
		for s := 1; s <= perTenant; s++ {
			env := engine.Envelope{ID: ulid.Make().String(), Type: benchType, Tenant: tenant, Actor: engine.DefaultActor,
				OccurredAt: time.Now().UTC(), Payload: map[string]any{"n": float64(s)}, Seq: uint64(s)}
			env.CorrelationID = env.ID
			if err := engine.Seal(&env, engine.Genesis); err != nil {
				return out, err
			}
			item, err := engine.EventItem(env)
			if err != nil {
				return out, err
			}
			body, err := ddbjson.MarshalMap(item)
			if err != nil {
				return out, err
			}
			seqOf[env.ID] = env.Seq
			bodies = append(bodies, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(len(bodies) % 10)), MessageBody: aws.String(string(body)),
				MessageGroupId: aws.String(tenant), MessageDeduplicationId: aws.String(env.ID)})
		}
	}
	total := len(bodies)
	sent = time.Now()
	for i := 0; i < total; i += 10 {
		if _, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: bodies[i:min(i+10, total)]}); err != nil {
			return out, err
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- consume(runCtx, q, handler) }()
	// Done when every message is deleted (completed, or dead and forwarded).
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		deleted := 0
		for _, m := range q.Messages(q.URL) {
			if m.Deleted {
				deleted++
			}
		}
		if deleted == total {
			break
		}
		select {
		case <-ctx.Done():
			stop()
			return out, fmt.Errorf("%d of %d messages done: %w", deleted, total, ctx.Err())
		case err := <-errc:
			stop()
			return out, fmt.Errorf("consumer stopped: %v", err)
		case <-tick.C:
		}
	}
	out.Seconds = time.Since(sent).Seconds()
	stop()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		return out, err
	}
	receives, waiting, waitingN := 0, 0, 0
	for _, m := range q.Messages(q.URL) {
		receives += m.Receives
		if seqOf[m.DedupID] > 2 {
			waiting += m.Receives
			waitingN++
		}
	}
	out.ReceivesPerEvent = float64(receives) / float64(total)
	if waitingN > 0 {
		out.WaitingReceives = float64(waiting) / float64(waitingN)
	}
	out.ReceiveCalls = q.Calls("ReceiveMessage")
	out.InDLQ = len(q.Messages(q.DLQURL))
	mu.Lock()
	out.Dead = total - finished
	out.Latency = latency.Summarize(lat)
	mu.Unlock()
	return out, nil
}
