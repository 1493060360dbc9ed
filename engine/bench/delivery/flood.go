package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/latency"
	"github.com/bowline-iot/bowline/internal/resources"
)

// The flood mode (--flood N): with the relay and the worker running on the
// local stack, one tenant's N events are written as fast as BatchWriteItem
// takes them, and while they are written (at a quarter, half and three
// quarters of the flood) one event of another tenant each time. Each
// event's latency is from just before its write to its handler done. The
// other tenant's latency during the flood is set beside the same event
// written with nothing else going on (at rest, three times first): tenants
// must not slow each other (docs/relay.md, "One tenant's burst does not
// hold the others").

// FloodResult is the flood mode's output (--json).
type FloodResult struct {
	Flood int `json:"flood"`
	// AtRest and DuringFlood are the other tenant's events' latencies;
	// FloodEvents the flood's own.
	AtRest      latency.Summary `json:"at_rest_ms"`
	DuringFlood latency.Summary `json:"during_flood_ms"`
	FloodEvents latency.Summary `json:"flood_events_ms"`
	// FloodSeconds is from the flood's first write to its last event
	// handled.
	FloodSeconds float64 `json:"flood_seconds"`
}

type floodClock struct {
	mu      sync.Mutex
	written map[string]time.Time
	lat     map[string]time.Duration
	waiters map[string]chan struct{}
}

func (c *floodClock) write(id string) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written[id] = time.Now()
	ch := make(chan struct{})
	c.waiters[id] = ch
	return ch
}

func (c *floodClock) done(id string) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.written[id]
	if _, seen := c.lat[id]; !ok || seen {
		return
	}
	c.lat[id] = now.Sub(at)
	close(c.waiters[id])
}

func (c *floodClock) of(ids []string) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, id := range ids {
		if d, ok := c.lat[id]; ok {
			out = append(out, d)
		}
	}
	return out
}

func flood(ctx context.Context, names resources.Names, cfg aws.Config, n, pollers int) (FloodResult, error) {
	res := FloodResult{Flood: n}
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	q := sqs.NewFromConfig(cfg)
	queue, err := queueURL(ctx, q, names.EventsQueue())
	if err != nil {
		return res, err
	}
	dlq, err := queueURL(ctx, q, names.EventsDLQ())
	if err != nil {
		return res, err
	}
	in, err := inbox.New(inbox.Config{Client: ddb, Table: names.InboxTable()})
	if err != nil {
		return res, err
	}
	dl, err := deadletter.New(ddb, names.DeadLettersTable(), nil)
	if err != nil {
		return res, err
	}
	clock := &floodClock{written: map[string]time.Time{}, lat: map[string]time.Duration{}, waiters: map[string]chan struct{}{}}
	w, err := worker.New(worker.Config{Queue: q, QueueURL: queue, DLQURL: dlq, Inbox: in, DeadLetters: dl, Pollers: pollers, WaitTime: time.Second, Logger: quiet(),
		Subscriptions: []engine.Subscription{{Name: "bench_flood", Pattern: benchType, Lane: engine.Durable,
			Handler: func(_ context.Context, env engine.Envelope) error { clock.done(env.ID); return nil }}}})
	if err != nil {
		return res, err
	}
	r, err := relay.New(relay.Config{Pipe: relay.EventsPipe, Streams: dynamodbstreams.NewFromConfig(cfg), Table: names.EventsTable(), Tables: ddb,
		Queue: q, QueueURL: queue, Checkpoints: ddb, CheckpointTable: names.InboxTable(), PollInterval: 50 * time.Millisecond, Logger: quiet()})
	if err != nil {
		return res, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() { _ = r.Run(runCtx) })
	wg.Go(func() { _ = w.Run(runCtx) })

	seq := map[string]uint64{}
	item := func(tenant string) (string, map[string]types.AttributeValue, error) {
		seq[tenant]++
		env := engine.Envelope{ID: ulid.Make().String(), Type: benchType, Tenant: tenant, Actor: engine.DefaultActor,
			OccurredAt: time.Now().UTC(), Payload: map[string]any{"n": float64(seq[tenant])}, Seq: seq[tenant]}
		env.CorrelationID = env.ID
		if err := engine.Seal(&env, engine.Genesis); err != nil {
			return "", nil, err
		}
		it, err := engine.EventItem(env)
		return env.ID, it, err
	}
	other, flooder := "other-"+ulid.Make().String()[20:], "flood-"+ulid.Make().String()[20:]
	var mu sync.Mutex // seq and the writes of the other tenant
	writeOther := func() (string, chan struct{}, error) {
		mu.Lock()
		defer mu.Unlock()
		id, it, err := item(other)
		if err != nil {
			return "", nil, err
		}
		ch := clock.write(id)
		_, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(names.EventsTable()), Item: it})
		return id, ch, err
	}
	wait := func(ch chan struct{}) error {
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("flood: %w", ctx.Err())
		}
	}
	var rest []string
	for range 4 { // the first warms the stack up and is not counted
		id, ch, err := writeOther()
		if err != nil {
			return res, err
		}
		if err := wait(ch); err != nil {
			return res, err
		}
		rest = append(rest, id)
	}
	res.AtRest = latency.Summarize(clock.of(rest[1:]))

	var floodIDs, during []string
	var chans []chan struct{}
	start := time.Now()
	for i := 0; i < n; i += 25 {
		var reqs []types.WriteRequest
		mu.Lock()
		for range min(25, n-i) {
			id, it, err := item(flooder)
			if err != nil {
				mu.Unlock()
				return res, err
			}
			floodIDs = append(floodIDs, id)
			chans = append(chans, clock.write(id))
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		mu.Unlock()
		for len(reqs) > 0 {
			out, err := ddb.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{names.EventsTable(): reqs}})
			if err != nil {
				return res, fmt.Errorf("flood write: %w", err)
			}
			reqs = out.UnprocessedItems[names.EventsTable()]
		}
		if k := len(during) + 1; k <= 3 && i+25 >= k*n/4 {
			id, ch, err := writeOther()
			if err != nil {
				return res, err
			}
			during = append(during, id)
			chans = append(chans, ch)
		}
	}
	for _, ch := range chans {
		if err := wait(ch); err != nil {
			return res, err
		}
	}
	res.FloodSeconds = time.Since(start).Seconds()
	res.DuringFlood = latency.Summarize(clock.of(during))
	res.FloodEvents = latency.Summarize(clock.of(floodIDs))
	return res, nil
}
