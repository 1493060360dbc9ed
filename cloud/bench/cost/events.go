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

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/rules"
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

// eventCounts is what the events pass counted: every AWS call of the
// events rule's stand-in, the events mapping's, ingest, the engine, the
// two pipes' stand-ins, the worker and its subscribers, and the
// record-change consumer (pass.Usage); the events rule's counts; the
// pipes' requests (messages forwarded after filtering); ingest's handler
// calls (HandleRecords: the Lambda invocations and their duration).
type eventCounts struct {
	Events          int64                `json:"events"`
	Emitted         int64                `json:"emitted"`
	Usage           awscalls.UsageCounts `json:"aws_usage"`
	BasicIngest     pricing.MessageCount `json:"basic_ingest"`
	RuleEvaluations int64                `json:"rule_evaluations"`
	RuleUnits       int64                `json:"rule_units"`
	RuleActions     int64                `json:"rule_actions"`
	RuleActionUnits int64                `json:"rule_action_units"`
	PipesRequests   map[string]int64     `json:"pipes_requests"`
	WorkerDeleted   int64                `json:"worker_deleted"`
	// Invocations and Records are the events consumer's handler calls
	// and the records they were handed; Handler their wall time.
	Invocations int64         `json:"invocations"`
	Records     int64         `json:"records"`
	Handler     time.Duration `json:"handler_ns"`
}

// measureEvents drives n bowl events of the fleet's bowls through the
// events path on the run's stack, with calls counted apart from the
// telemetry run's: Basic Ingest publishes to the events rule's stand-in
// (rules.Events: a record per event into the events stream, partitioned
// by tenant), the events mapping's stand-in (eventsource.EventsConsumer)
// calling ingest's HandleRecords (registry, Emit's TransactWriteItems,
// its seq rows), the events pipe's stand-in (DynamoDB
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
			c.Checkpoints, c.Tables, c.Logger, c.Observer = local, local, env.Log.With("part", "relay", "pipe", spec.Name), relayCount{n: fw}
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

	// The ingress as in AWS: the events rule's stand-in (rules.Events
	// only; the telemetry run's stand-in runs the telemetry rules) puts
	// each Basic Ingest publish into the events stream, partitioned by
	// tenant, and the events mapping's stand-in hands the stream to
	// ingest's HandleRecords. What only the stand-ins do (their
	// checkpoints) is not counted.
	rr, err := a.Rules(ctx, rules.Config{Broker: env.BrokerURL, ClientID: standInPrefix + "rules-events",
		Rules: []rules.Spec{rules.Events}, Now: env.Now, Logger: env.Log.With("part", "rules")})
	if err != nil {
		return eventCounts{}, fmt.Errorf("events: %w", err)
	}
	goRun("events rule", rr.Run)
	select {
	case <-rr.Ready():
	case <-time.After(time.Minute):
		return eventCounts{}, errors.New("events: the events rule's stand-in did not subscribe within a minute")
	}
	h := &timedHandler{h: app.IngestHandler(in)}
	es, err := a.EventsSource(ctx, h.handle, func(c *eventsource.Config) {
		c.Checkpoints, c.PollInterval, c.Logger = local, 100*time.Millisecond, env.Log.With("part", "eventsource", "mapping", eventsource.EventsConsumer.Name)
	})
	if err != nil {
		return eventCounts{}, fmt.Errorf("events: %w", err)
	}
	goRun("events source", es.Run)
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(env.BrokerURL).SetClientID("cost-events").SetCleanSession(true))
	if tok := pub.Connect(); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
		return eventCounts{}, fmt.Errorf("events: connect the publisher: %v", tok.Error())
	}
	defer pub.Disconnect(250)

	// Let the start-up calls (queue attributes, stream descriptions,
	// first polls) pass before counting.
	time.Sleep(2 * time.Second)
	u0, r0 := usage.Counts(), rr.Counts()[rules.Events.Base]
	c := eventCounts{PipesRequests: map[string]int64{}}
	rule := wire.RuleName(env.Names.Stack, wire.EventsRule)
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
		topic := wire.BasicIngestTopic(rule, wire.Topic{Tenant: env.Tenant, Thing: thing, Kind: wire.KindEvents})
		c.BasicIngest = c.BasicIngest.Add(pricing.MessageCount{Messages: 1, Units: max(1, int64(math.Ceil(float64(len(topic)+len(raw))/awscalls.IoTMeterUnit)))})
		// One event at a time, each handed over alone (a bowl's events
		// come hours apart): no batch shares a seq row or a commit.
		if tok := pub.Publish(topic, 1, false, raw); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
			return eventCounts{}, fmt.Errorf("events: publish %s of %s: %v", typ, thing, tok.Error())
		}
		deadline := time.Now().Add(time.Minute)
		for h.records.Load() < int64(i+1) {
			if time.Now().After(deadline) {
				return eventCounts{}, fmt.Errorf("events: %s of %s not handled within a minute", typ, thing)
			}
			select {
			case <-ctx.Done():
				return eventCounts{}, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
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
	r1 := rr.Counts()[rules.Events.Base]
	c.RuleEvaluations, c.RuleUnits = r1.Evaluations-r0.Evaluations, r1.EvaluationUnits-r0.EvaluationUnits
	c.RuleActions, c.RuleActionUnits = r1.Actions-r0.Actions, r1.ActionUnits-r0.ActionUnits
	c.Invocations, c.Records, c.Handler = h.calls.Load(), h.records.Load(), time.Duration(h.nanos.Load())
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
	var data wire.Data
	switch typ {
	case catalog.TypeMealFinished:
		data = wire.MealFinished{GramsEaten: 41.3, DurationS: 182, StartedAt: at.Add(-3 * time.Minute), PetTag: fmt.Sprintf("tag-%d", seq%2)}
	case catalog.TypeRefilled:
		data = wire.Refilled{GramsAdded: 250.0, LevelG: 312.4}
	case catalog.TypeFoodLow:
		data = wire.FoodLow{LevelG: 48.2, ThresholdG: 50.0}
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
	c.RuleActions += scale(e.RuleActions)
	c.RuleActionUnits += scale(e.RuleActionUnits)
	// The events stream is a stream of its own (shards, retention and
	// its consumer's invocations apart from telemetry's).
	c.Events = pricing.StreamCounts{
		Records: scale(u.KinesisRecords), Bytes: scale(u.KinesisBytes), BilledBytes: scale(u.KinesisBilledBytes),
		PutUnits: scale(u.KinesisPutUnits), BytesRead: scale(u.KinesisBytesRead),
		Invocations: scale(e.Invocations),
		// Ingest's handler waits on DynamoDB nearly all its time: billed
		// as waiting (gbSeconds with no CPU part).
		GBSeconds:   gbSeconds(e.Handler, 0, memoryMB) * f,
		BatchSize:   eventsource.EventsConsumer.BatchSize,
		BatchWindow: time.Duration(eventsource.EventsConsumer.MaximumBatchingWindowInSeconds) * time.Second,
	}
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
}

// timedHandler counts an event source handler's calls (Lambda
// invocations), the records handed to it and its wall time.
type timedHandler struct {
	h                     eventsource.Handler
	calls, records, nanos atomic.Int64
}

func (t *timedHandler) handle(ctx context.Context, recs []eventsource.Record) (string, error) {
	start := time.Now()
	retry, err := t.h(ctx, recs)
	t.nanos.Add(int64(time.Since(start)))
	t.calls.Add(1)
	if err == nil && retry == "" {
		t.records.Add(int64(len(recs)))
	}
	return retry, err
}

// ingestTimes counts ingest's emits.
type ingestTimes struct {
	ingest.NopObserver
	emitted atomic.Int64
}

func (o *ingestTimes) Emitted(string) { o.emitted.Add(1) }

// relayCount counts a pipe's messages forwarded: its billed requests
// (each well under 64 KB).
type relayCount struct {
	relay.NopObserver
	n *atomic.Int64
}

func (r relayCount) Forwarded(n int) { r.n.Add(int64(n)) }

// workerCount counts the worker's deleted messages.
type workerCount struct {
	worker.NopObserver
	deleted atomic.Int64
}

func (w *workerCount) Deleted() { w.deleted.Add(1) }
