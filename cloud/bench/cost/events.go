package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine/recordchange"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/awscalls"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/pricing"
)

// eventsPerBowlDay is what a bowl sends (the figure): the day's
// mix of eventMix.
const eventsPerBowlDay = 8

// eventMix is a bowl's day of events: three meals of each of two pets, a
// refill and the food-low warning before it. The simulator has no event
// rate of its own to measure (edge/detect detects what the load-cell
// model shows; its week test counts quality, not a rate).
var eventMix = []string{
	catalog.TypeMealFinished, catalog.TypeMealFinished, catalog.TypeMealFinished,
	catalog.TypeMealFinished, catalog.TypeMealFinished, catalog.TypeMealFinished,
	catalog.TypeFoodLow, catalog.TypeRefilled,
}

// ingressNote marks every count of the events' ingress.
const ingressNote = "ingress counted as one rule + one Kinesis record per event message; re-count once the events rule lands"

// eventCounts is what the events pass counted: every AWS call of ingest,
// the engine, the two pipes' stand-ins, the worker and its subscribers,
// and the record-change consumer (pass.Usage); the ingress stand-in's
// rule counts; the pipes' requests (messages forwarded after filtering);
// ingest's handler time (receipt to acknowledgement: the Lambda
// invocation's duration).
type eventCounts struct {
	Events          int64                `json:"events"`
	Emitted         int64                `json:"emitted"`
	Usage           awscalls.UsageCounts `json:"aws_usage"`
	BasicIngest     pricing.MessageCount `json:"basic_ingest"`
	RuleEvaluations int64                `json:"rule_evaluations"`
	RuleUnits       int64                `json:"rule_units"`
	PipesRequests   map[string]int64     `json:"pipes_requests"`
	WorkerDeleted   int64                `json:"worker_deleted"`
	Handler         time.Duration        `json:"handler_ns"`
	Note            string               `json:"note"`
}

// measureEvents drives n bowl events of the fleet's bowls through the
// events path on the run's stack, with calls counted apart from the
// telemetry run's: the ingress stand-in (one rule and one Kinesis record
// per event message), ingest's handler (registry, Emit's
// TransactWriteItems, its seq rows), the events pipe's stand-in (DynamoDB
// Streams to events.fifo), the worker with the cloud subscribers against
// the fake providers, the record-changes pipe and its consumer. It
// returns once everything the events caused is done (no call but polls
// for quiet), or at the deadline.
func measureEvents(ctx context.Context, env Env, n int) (eventCounts, error) {
	usage := awscalls.NewUsage()
	counted := usage.Config(env.LocalAWS)
	a, err := app.Open(app.Config{AWS: counted, Names: env.Names, Logger: env.Log, Part: app.PartEngine})
	if err != nil {
		return eventCounts{}, fmt.Errorf("events: %w", err)
	}
	defer a.Close()
	local := dynamodb.NewFromConfig(env.LocalAWS, awsenv.DynamoDBOptions)

	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var runErr error
	goRun := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(runCtx); err != nil && !errors.Is(err, context.Canceled) && runCtx.Err() == nil {
				errMu.Lock()
				runErr = errors.Join(runErr, fmt.Errorf("%s: %w", name, err))
				errMu.Unlock()
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()

	fk, err := fakes.Serve(runCtx, fakes.NewSet())
	if err != nil {
		return eventCounts{}, fmt.Errorf("events: %w", err)
	}
	defer fk.Close()

	// Ingest's handler. Its registry cache is turned off: a bowl's events
	// come hours apart, past any cache, so each looks its thing up.
	obs := &ingestTimes{}
	in, err := a.Ingest(ingest.Config{RegistryTTL: time.Nanosecond,
		Logger: env.Log.With("part", "ingest"), Observer: obs})
	if err != nil {
		return eventCounts{}, fmt.Errorf("events: %w", err)
	}
	goRun("ingest", in.Run)

	// The two pipes: what a Pipe does (read the stream, send to the
	// queue) counted; the stand-in's own checkpoints and table lookups not.
	events, recordChanges, err := a.Pipes()
	if err != nil {
		return eventCounts{}, err
	}
	forwarded := map[string]*atomic.Int64{}
	for _, spec := range []relay.PipeSpec{events, recordChanges} {
		fw := &atomic.Int64{}
		forwarded[spec.Name] = fw
		r, err := a.Relay(ctx, spec, func(c *relay.Config) {
			c.Checkpoints, c.Tables, c.Logger, c.Observer = local, local, env.Log.With("part", "relay", "pipe", spec.Name), relayCount{fw}
		})
		if err != nil {
			return eventCounts{}, fmt.Errorf("events: relay %s: %w", spec.Name, err)
		}
		goRun("relay "+spec.Name, r.Run)
	}

	set, err := a.Subscribers(fk.AdapterConfig(), env.Log.With("part", "subscribers"))
	if err != nil {
		return eventCounts{}, err
	}
	bound, err := app.Bind(set, env.Log, nil)
	if err != nil {
		return eventCounts{}, err
	}
	wo := &workerCount{}
	w, err := a.Worker(ctx, bound, func(c *worker.Config) {
		c.WaitTime, c.Logger, c.Observer = 20*time.Second, env.Log.With("part", "worker"), wo
	})
	if err != nil {
		return eventCounts{}, err
	}
	goRun("worker", w.Run)
	rc, err := a.RecordChanges(ctx, bound, func(c *recordchange.Config) {
		c.WaitTime, c.Logger = 20*time.Second, env.Log.With("part", "record-changes")
	})
	if err != nil {
		return eventCounts{}, err
	}
	goRun("record-changes", rc.Run)

	// The ingress stand-in's stream: partitioned by tenant, made on the
	// uncounted client.
	kin := kinesis.NewFromConfig(env.LocalAWS)
	stream := env.Names.Stack + "-events-ingress"
	if _, err := kin.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(1)}); err != nil {
		return eventCounts{}, fmt.Errorf("events: create stream %s: %w", stream, err)
	}
	if err := kinesis.NewStreamExistsWaiter(kin).Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(stream)}, time.Minute); err != nil {
		return eventCounts{}, fmt.Errorf("events: stream %s: %w", stream, err)
	}
	put := kinesis.NewFromConfig(counted)

	// Let the start-up calls (queue attributes, stream descriptions,
	// first polls) pass before counting.
	time.Sleep(2 * time.Second)
	u0 := usage.Counts()
	c := eventCounts{Note: ingressNote, PipesRequests: map[string]int64{}}
	rule := wire.RuleName(env.Names.Stack, wire.KindEvents)
	var bowls []string
	for _, gw := range env.Gateways {
		bowls = append(bowls, env.Bowls[gw]...)
	}
	seqs := map[string]uint64{}
	at := env.Now().Add(-time.Hour)
	for i := range n {
		thing := bowls[i%len(bowls)]
		seqs[thing]++
		typ := eventMix[(i/len(bowls))%len(eventMix)]
		raw, err := eventMessage(thing, seqs[thing], typ, at.Add(time.Duration(i)*time.Second))
		if err != nil {
			return eventCounts{}, err
		}
		topic := wire.Topic{Tenant: env.Tenant, Thing: thing, Kind: wire.KindEvents}.String()
		units := max(1, int64(math.Ceil(float64(len(wire.BasicIngestTopic(rule, wire.Topic{Tenant: env.Tenant, Thing: thing, Kind: wire.KindEvents}))+len(raw))/awscalls.IoTMeterUnit)))
		c.BasicIngest = c.BasicIngest.Add(pricing.MessageCount{Messages: 1, Units: units})
		c.RuleEvaluations++
		c.RuleUnits += max(1, int64(math.Ceil(float64(len(topic)+len(raw))/awscalls.IoTMeterUnit)))
		if _, err := put.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(stream), PartitionKey: aws.String(env.Tenant), Data: raw}); err != nil {
			return eventCounts{}, fmt.Errorf("events: put record: %w", err)
		}
		acked := make(chan struct{})
		start := time.Now()
		if err := in.Handle(ctx, topic, raw, time.Time{}, func() { close(acked) }); err != nil {
			return eventCounts{}, fmt.Errorf("events: ingest %s of %s: %w", typ, thing, err)
		}
		if err := in.FlushSeqs(ctx); err != nil {
			return eventCounts{}, fmt.Errorf("events: ingest %s of %s: seq rows: %w", typ, thing, err)
		}
		select {
		case <-acked:
		case <-time.After(time.Minute):
			return eventCounts{}, fmt.Errorf("events: %s of %s not acknowledged within a minute", typ, thing)
		case <-ctx.Done():
			return eventCounts{}, ctx.Err()
		}
		c.Handler += time.Since(start)
		c.Events++
	}

	// Wait until what the events caused is done: no call but polls for
	// 5 s, at most 2 minutes.
	deadline := time.Now().Add(2 * time.Minute)
	last, quietSince := busyCalls(usage.Counts()), time.Now()
	for time.Since(quietSince) < 5*time.Second && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return eventCounts{}, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if b := busyCalls(usage.Counts()); b != last {
			last, quietSince = b, time.Now()
		}
	}
	c.Usage = usage.Counts().Since(u0)
	c.Emitted = obs.emitted.Load()
	for name, fw := range forwarded {
		c.PipesRequests[name] = fw.Load()
	}
	c.WorkerDeleted = wo.deleted.Load()
	errMu.Lock()
	defer errMu.Unlock()
	return c, runErr
}

// busyCalls counts the calls that are work, not polls of an idle queue or
// stream.
func busyCalls(u awscalls.UsageCounts) int64 {
	var n int64
	for op, k := range u.Calls {
		if strings.Contains(op, "Receive") || strings.Contains(op, "GetRecords") || strings.Contains(op, "GetShardIterator") ||
			strings.Contains(op, "DescribeStream") || strings.Contains(op, "ListStreams") || strings.Contains(op, "ListShards") {
			continue
		}
		n += k
	}
	return n
}

// eventMessage is a bowl's event on the wire, with a plausible payload
// of its type.
func eventMessage(thing string, seq uint64, typ string, at time.Time) ([]byte, error) {
	at = at.UTC().Truncate(time.Millisecond)
	var data map[string]any
	switch typ {
	case catalog.TypeMealFinished:
		data = map[string]any{"grams_eaten": 41.3, "duration_s": 182, "started_at": at.Add(-3 * time.Minute).Format(time.RFC3339Nano), "pet_tag": fmt.Sprintf("tag-%d", seq%2)}
	case catalog.TypeRefilled:
		data = map[string]any{"grams_added": 250.0, "level_g": 312.4}
	case catalog.TypeFoodLow:
		data = map[string]any{"level_g": 48.2, "threshold_g": 50.0}
	default:
		return nil, fmt.Errorf("events: no payload for type %q", typ)
	}
	d, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(wire.EventMessage{V: 1, Thing: thing, Seq: seq, ID: fmt.Sprintf("e%d", seq), Type: typ, At: at, Data: d, SentAt: at})
}

// addEvents adds the events pass's counts to c in proportion: the fleet's
// bowls send eventsPerBowlDay events a day, so over c.Duration they send
// bowls x eventsPerBowlDay x c.Duration / 24 h, and each count of the pass
// is scaled from its e.Events to that. Streams reads are left out: a
// Pipe polls each shard whatever the traffic, so they do not grow with
// events.
func addEvents(c *pricing.Counts, e eventCounts, memoryMB int) {
	if e.Events == 0 {
		return
	}
	f := float64(c.Bowls) * eventsPerBowlDay * c.Duration.Hours() / 24 / float64(e.Events)
	scale := func(n int64) int64 { return int64(math.Round(float64(n) * f)) }
	u := e.Usage
	c.BasicIngest = c.BasicIngest.Add(pricing.MessageCount{Messages: scale(e.BasicIngest.Messages), Units: scale(e.BasicIngest.Units)})
	c.RuleEvaluations += scale(e.RuleEvaluations)
	c.RuleUnits += scale(e.RuleUnits)
	c.RuleActions += scale(e.RuleEvaluations)
	c.RuleActionUnits += scale(e.RuleUnits)
	c.KinesisRecords += scale(u.KinesisRecords)
	c.KinesisBytes += scale(u.KinesisBytes)
	c.KinesisBilledBytes += scale(u.KinesisBilledBytes)
	c.KinesisPutUnits += scale(u.KinesisPutUnits)
	if c.WRU == nil {
		c.WRU = map[string]float64{}
	}
	if c.RRU == nil {
		c.RRU = map[string]float64{}
	}
	for t, v := range u.WRU {
		c.WRU[t] += v * f
	}
	for t, v := range u.RRU {
		c.RRU[t] += v * f
	}
	c.SQSRequests += scale(u.SQSRequests)
	c.SQSFIFORequests += scale(u.SQSFIFORequests)
	var pipes int64
	for _, n := range e.PipesRequests {
		pipes += n
	}
	c.PipesRequests += scale(pipes)
	c.SQSFIFOMessages += scale(e.PipesRequests["events"])
	c.Pipes = len(e.PipesRequests)
	// Ingest's handler waits on DynamoDB nearly all its time: billed as
	// waiting (gbSeconds with no CPU part).
	c.LambdaGBSeconds += gbSeconds(e.Handler, 0, memoryMB) * f
}

// ingestTimes counts ingest's emits.
type ingestTimes struct {
	ingest.NopObserver
	emitted atomic.Int64
}

func (o *ingestTimes) Emitted(string) { o.emitted.Add(1) }

// relayCount counts a pipe's messages forwarded: its billed requests
// (each well under 64 KB).
type relayCount struct{ n *atomic.Int64 }

func (r relayCount) Forwarded(n int) { r.n.Add(int64(n)) }
func (relayCount) Filtered(int)      {}
func (relayCount) TransformFailed()  {}
func (relayCount) Rejected()         {}
func (relayCount) SendError()        {}
func (relayCount) DeadLettered()     {}
func (relayCount) Lag(time.Duration) {}

// workerCount counts the worker's deleted messages.
type workerCount struct{ deleted atomic.Int64 }

func (*workerCount) Received(int)                          {}
func (*workerCount) Claim(string, string)                  {}
func (*workerCount) Handled(string, string, time.Duration) {}
func (*workerCount) DeadLetter(string)                     {}
func (*workerCount) Poison()                               {}
func (*workerCount) Unmatched(string)                      {}
func (w *workerCount) Deleted()                            { w.deleted.Add(1) }
func (*workerCount) ForwardedToDLQ()                       {}
