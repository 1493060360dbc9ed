package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/ddbjson"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/engine/worker"
)

// The two ceilings of the pipeline, measured in the same run: the worker
// over SQS with an in-memory inbox (what the worker's concurrency model
// costs against raw receive+delete), and the inbox alone on DynamoDB
// Local (claim + complete of four subscriptions per event, no queue).

// workerOnly sends events messages straight to the queue and times the
// worker delivering them to four subscriptions through an in-memory inbox.
func (b *bench) workerOnly(ctx context.Context) (float64, error) {
	seq := map[string]uint64{}
	for i := 0; i < b.events; i += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, b.events); j++ {
			tenant := fmt.Sprintf("only%02d", j%b.tenants)
			seq[tenant]++
			env := engine.Envelope{ID: ulid.Make().String(), Type: benchType, Tenant: tenant, Actor: engine.DefaultActor,
				OccurredAt: time.Now().UTC(), Payload: map[string]any{"n": float64(j)}, Seq: seq[tenant]}
			env.CorrelationID = env.ID
			if err := engine.Seal(&env, engine.Genesis); err != nil {
				return 0, err
			}
			item, err := engine.EventItem(env)
			if err != nil {
				return 0, err
			}
			body, err := ddbjson.MarshalMap(item)
			if err != nil {
				return 0, err
			}
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
				Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(string(body)),
				MessageGroupId: aws.String(tenant), MessageDeduplicationId: aws.String(env.ID),
			})
		}
		if _, err := b.hsqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(b.queue), Entries: entries}); err != nil {
			return 0, fmt.Errorf("worker-only send: %w", err)
		}
	}
	var done atomic.Int64
	target := int64(b.events * 4)
	finished := make(chan struct{})
	var subs []engine.Subscription
	for _, name := range []string{"fanout_a", "fanout_b", "fanout_c", "fanout_d"} {
		subs = append(subs, engine.Subscription{Name: name, Pattern: benchType, Lane: engine.Durable,
			Handler: func(context.Context, engine.Envelope) error {
				if done.Add(1) == target {
					close(finished)
				}
				return nil
			}})
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	w, err := worker.New(worker.Config{Queue: b.hsqs, QueueURL: b.queue, DLQURL: b.dlq, Inbox: newMemInbox(), DeadLetters: nopLetters{},
		Subscriptions: subs, Pollers: b.pollers, WaitTime: time.Second, Logger: log})
	if err != nil {
		return 0, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(runCtx) })
	select {
	case <-finished:
	case <-ctx.Done():
		stop()
		wg.Wait()
		return 0, fmt.Errorf("worker-only: %d of %d handler runs before %w", done.Load(), target, ctx.Err())
	}
	elapsed := time.Since(start)
	stop()
	wg.Wait()
	for b.depth(ctx) > 0 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	return float64(b.events) / elapsed.Seconds(), nil
}

// inboxCeiling times claim + complete of four subscriptions for events
// events through the inbox on DynamoDB Local, from 16 goroutines (about
// where DynamoDB Local's throughput peaks on a small machine).
func (b *bench) inboxCeiling(ctx context.Context) (float64, error) {
	in, err := inbox.New(inbox.Config{Client: b.hddb, Table: b.names.InboxTable()})
	if err != nil {
		return 0, err
	}
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	start := time.Now()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for n := next.Add(1); n <= int64(b.events*4) && ctx.Err() == nil; n = next.Add(1) {
				c, err := in.Claim(ctx, fmt.Sprintf("ceiling-%d", n/4), fmt.Sprintf("sub%d", n%4), "bench", 30*time.Second)
				if err == nil {
					err = in.Complete(ctx, c)
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, fmt.Errorf("inbox ceiling: %w", firstErr)
	}
	return float64(b.events) / time.Since(start).Seconds(), nil
}

// memInbox is an in-memory worker.Inbox: claims always succeed once.
type memInbox struct {
	mu   sync.Mutex
	done map[string]bool
}

func newMemInbox() *memInbox { return &memInbox{done: map[string]bool{}} }

func (m *memInbox) Claim(_ context.Context, eventID, sub, worker string, lease time.Duration) (inbox.Claim, error) {
	key := inbox.Key(eventID, sub)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done[key] {
		return inbox.Claim{}, &inbox.ClaimError{Key: key, Status: inbox.Completed, Err: inbox.ErrCompleted}
	}
	return inbox.Claim{Key: key, EventID: eventID, Subscription: sub, Worker: worker, Token: "t", Attempts: 1, LeaseExpires: time.Now().Add(lease)}, nil
}

func (m *memInbox) Complete(_ context.Context, c inbox.Claim) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done[c.Key] = true
	return nil
}

func (m *memInbox) Release(context.Context, inbox.Claim, error) error  { return nil }
func (m *memInbox) MarkDead(context.Context, inbox.Claim, error) error { return nil }
func (m *memInbox) Extend(_ context.Context, _ inbox.Claim, lease time.Duration) (time.Time, error) {
	return time.Now().Add(lease), nil
}

// nopLetters is a worker.DeadLetters that records nothing.
type nopLetters struct{}

func (nopLetters) Record(context.Context, deadletter.Letter) error       { return nil }
func (nopLetters) RecordPoison(context.Context, deadletter.Letter) error { return nil }
func (nopLetters) CountUnmatched(context.Context, string) error          { return nil }

var (
	_ worker.Inbox       = (*memInbox)(nil)
	_ worker.DeadLetters = nopLetters{}
)
