package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/cloud/subscribers"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/anchor"
	"github.com/bowline-iot/bowline/engine/reconcile"
	"github.com/bowline-iot/bowline/engine/recordchange"
	"github.com/bowline-iot/bowline/engine/redrive"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Worker builds the DURABLE-lane worker on events.fifo, its DLQ, the inbox
// and dead_letters. bound is the catalog with handlers (Bind). tune, when
// not nil, adjusts the config (pollers, lease, logger, observer) before it
// is validated; an Observer it leaves nil is the App's WorkerMetrics.
//
// MaxReceiveCount is the queue's own: the maxReceiveCount of events.fifo's
// RedrivePolicy (GetQueueAttributes), so the worker's "last receive"
// matches the receive on which SQS would move the message. When the queue
// has no redrive policy (a hand-made queue), it falls back to
// resources.EventsMaxReceiveCount, what provisioning and the CloudFormation
// template set, and logs a warning.
func (a *App) Worker(ctx context.Context, bound engine.Catalog, tune func(*worker.Config)) (*worker.Worker, error) {
	a = a.Part(PartWorker)
	queue, dlq, err := a.eventQueues(ctx)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	maxReceive, ok, err := worker.QueueMaxReceiveCount(ctx, a.SQS, queue)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	if !ok {
		maxReceive = resources.EventsMaxReceiveCount
		a.Logger.Warn("events queue has no redrive policy; assuming its maxReceiveCount", "queue", queue, "max_receive_count", maxReceive)
	}
	c := worker.Config{
		Queue: a.SQS, QueueURL: queue, DLQURL: dlq, Inbox: a.Inbox, DeadLetters: a.DeadLetters,
		Subscriptions: bound.Subscriptions, Declared: bound.Declared,
		MaxReceiveCount: maxReceive, Logger: a.Logger,
	}
	if tune != nil {
		tune(&c)
	}
	if c.Observer == nil {
		c.Observer = a.WorkerMetrics()
	}
	return worker.New(c)
}

// Pipes are the two pipes narrowed to what a.Catalog's subscriptions read
// (catalog.Pipes): what `bowline relay` and `bowline dev` run, and what
// the CloudFormation Pipes carry.
func (a *App) Pipes() (events, recordChanges relay.PipeSpec, err error) {
	return catalog.Pipes(a.Catalog)
}

// Relay builds the local stand-in of one of the two pipes: EventsPipe reads
// the events table into events.fifo, RecordChangesPipe the app table into
// record-changes; checkpoints go to the inbox table, dead letters to
// pipes-dlq (the Pipes' DeadLetterConfig). An Observer tune leaves nil is
// the App's RelayMetrics for the pipe.
func (a *App) Relay(ctx context.Context, spec relay.PipeSpec, tune func(*relay.Config)) (*relay.Relay, error) {
	var table, queue string
	switch spec.Name {
	case relay.EventsPipe.Name:
		table, queue = a.Names.EventsTable(), a.Names.EventsQueue()
	case relay.RecordChangesPipe.Name:
		table, queue = a.Names.AppTable(), a.Names.RecordChangesQueue()
	default:
		return nil, fmt.Errorf("relay for stack %s: unknown pipe %q (want %s or %s)", a.Names.Stack, spec.Name, relay.EventsPipe.Name, relay.RecordChangesPipe.Name)
	}
	// What the Pipe does in AWS (read the stream, send to the queue) is
	// recorded apart from what only this stand-in does.
	local, pipe := a.Part(PartRelay), a.Part(PartPipe(spec.Name))
	url, err := local.QueueURL(ctx, queue)
	if err != nil {
		return nil, fmt.Errorf("relay %s: %w", spec.Name, err)
	}
	dlq, err := local.QueueURL(ctx, a.Names.PipesDLQ())
	if err != nil {
		return nil, fmt.Errorf("relay %s: %w", spec.Name, err)
	}
	c := relay.Config{
		Pipe: spec, Streams: pipe.Streams, Table: table, Tables: local.DynamoDB,
		Queue: pipe.SQS, QueueURL: url, DeadLetterURL: dlq, Checkpoints: local.DynamoDB, CheckpointTable: a.Names.InboxTable(),
		Logger: a.Logger,
	}
	if tune != nil {
		tune(&c)
	}
	if c.Observer == nil {
		c.Observer = a.RelayMetrics().For(spec.Name)
	}
	return relay.New(c)
}

// Redriver builds the operator's redrive from the events DLQ back to
// events.fifo.
func (a *App) Redriver(ctx context.Context, tune func(*redrive.Config)) (*redrive.Redriver, error) {
	return a.Part(PartRedrive).redriver(ctx, tune)
}

// redriver is Redriver for the part a is.
func (a *App) redriver(ctx context.Context, tune func(*redrive.Config)) (*redrive.Redriver, error) {
	queue, dlq, err := a.eventQueues(ctx)
	if err != nil {
		return nil, fmt.Errorf("redrive: %w", err)
	}
	c := redrive.Config{Queue: a.SQS, QueueURL: queue, DLQURL: dlq, Inbox: a.Inbox, DeadLetters: a.DeadLetters, Logger: a.Logger}
	if tune != nil {
		tune(&c)
	}
	return redrive.New(c)
}

// RecordChanges builds the BEST_EFFORT consumer of the record-changes
// queue. An Observer tune leaves nil is the App's RecordChangesMetrics.
func (a *App) RecordChanges(ctx context.Context, bound engine.Catalog, tune func(*recordchange.Config)) (*recordchange.Consumer, error) {
	a = a.Part(PartWorker)
	url, err := a.QueueURL(ctx, a.Names.RecordChangesQueue())
	if err != nil {
		return nil, fmt.Errorf("record-change consumer: %w", err)
	}
	c := recordchange.Config{Queue: a.SQS, QueueURL: url, Subscriptions: bound.Subscriptions, Logger: a.Logger}
	if tune != nil {
		tune(&c)
	}
	if c.Observer == nil {
		c.Observer = a.RecordChangesMetrics()
	}
	return recordchange.New(c)
}

// API builds the HTTP API emitting through the App's engine, with the
// stack reconciler behind /v1/ops/reconcile and the App's registry on
// /metrics. Its /console/ refuses (unless settings.ConsoleAddr takes the
// console off its listener): APIWithConsole mounts one.
func (a *App) API(settings api.Settings, log *slog.Logger) (*api.API, error) {
	return a.APIWithConsole(settings, nil, log)
}

// APIWithConsole is API with the web console con (App.Console) mounted
// beside it as settings.ConsoleAddr says (consoleMounts): under /console/
// on the API's listener when it is "", not there otherwise (serve con
// with the API's ServeHandler on that address, or nowhere for
// api.ConsoleOff). nil con mounts the console's refusal.
func (a *App) APIWithConsole(settings api.Settings, con http.Handler, log *slog.Logger) (*api.API, error) {
	a = a.Part(PartAPI)
	if log == nil {
		log = a.Logger
	}
	rec := &api.StackReconciler{
		Config: reconcile.Config{
			Chains: a.Verifier(), DeadLetters: a.DeadLetters, Queue: a.SQS,
			Progress:  reconcile.Progress{DB: a.DynamoDB, Table: a.Names.InboxTable()},
			Unsettled: reconcile.InboxCheck{DB: a.DynamoDB, EventsTable: a.Names.EventsTable(), InboxTable: a.Names.InboxTable(), Subscriptions: a.Catalog.Subscriptions},
		},
		DLQ: func(ctx context.Context) (string, error) { return a.QueueURL(ctx, a.Names.EventsDLQ()) },
	}
	g, err := a.guardFor(settings.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	return api.New(api.Config{
		Emitter: a.emitter(), DB: a.DynamoDB, Names: a.Names,
		Tokens: settings.Tokens, OpsToken: settings.OpsToken, WebhookSecret: settings.WebhookSecret, Prices: settings.Prices,
		Reconciler: rec, Observer: api.NewMetrics(a.Registry), Gatherer: a.Registry, Logger: log,
		Mounts: consoleMounts(settings.ConsoleAddr, con), Guard: g,
	})
}

// Subscribers builds the cloud subscribers on the App's engine and the
// providers at cfg's URLs. A provider without a base URL is logged: its
// calls fail terminally (dead letters), they do not loop.
func (a *App) Subscribers(cfg adapters.Config, log *slog.Logger) (*subscribers.Set, error) {
	a = a.Part(PartWorker)
	if log == nil {
		log = a.Logger
	}
	for name, u := range map[string]string{adapters.ShopifyURLEnv: cfg.ShopifyURL, adapters.ShippingURLEnv: cfg.ShippingURL, adapters.NotifyURLEnv: cfg.NotifyURL} {
		if u == "" {
			log.Warn("provider url not set: its subscriptions will dead-letter", "env", name)
		}
	}
	cfg.Logger = log
	clients, err := adapters.New(cfg)
	if err != nil {
		return nil, err
	}
	return subscribers.New(subscribers.Config{
		DB: a.DynamoDB, Emitter: a.emitter(), Names: a.Names,
		Shop: clients.Shopify, Shipping: clients.Shipping, Notify: clients.Notify, Logger: log,
	})
}

// Ingest builds the events consumer (cloud/ingest) on the App's engine and
// clients; cfg gives the tuning (its Names, DynamoDB and Emitter are
// filled from the App; a nil Observer is the App's IngestMetrics). Run it
// behind EventsSource with IngestHandler.
func (a *App) Ingest(cfg ingest.Config) (*ingest.Ingester, error) {
	a = a.Part(PartIngest)
	cfg.Names = a.Names
	cfg.DynamoDB, cfg.Emitter = a.DynamoDB, a.emitter()
	if cfg.Logger == nil {
		cfg.Logger = a.Logger
	}
	if cfg.Observer == nil {
		cfg.Observer = a.IngestMetrics()
	}
	return ingest.New(cfg)
}

// Rules builds the local stand-in for the AWS IoT topic rules
// (cloud/rules): cfg gives the broker, identity and tuning; the stack, each
// rule's stream (Spec.Stream), the Kinesis and SQS clients and the
// rule-errors queue's URL (the rules' error action) are filled from the App,
// and a nil Observer is the App's RulesMetrics.
func (a *App) Rules(ctx context.Context, cfg rules.Config) (*rules.Runner, error) {
	a = a.Part(PartRules)
	// Every rule errors to the same queue.
	url, err := a.QueueURL(ctx, rules.Telemetry.ErrorQueue(a.Names))
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	cfg.Stack, cfg.Stream = a.Names.Stack, rules.Telemetry.Stream(a.Names)
	cfg.Streams = map[string]string{}
	for _, s := range rules.All() {
		cfg.Streams[s.Base] = s.Stream(a.Names)
	}
	cfg.Kinesis, cfg.SQS, cfg.ErrorQueueURL = a.Kinesis, a.SQS, url
	if cfg.Logger == nil {
		cfg.Logger = a.Logger
	}
	if cfg.Observer == nil {
		cfg.Observer = a.RulesMetrics()
	}
	return rules.New(cfg)
}

// Devices is the device registry in the app table (thing -> tenant).
func (a *App) Devices() (*devices.Registry, error) {
	a = a.Part(PartDevices)
	return devices.New(a.DynamoDB, a.Names.AppTable(), nil)
}

// Anchor builds the anchor ledger (engine/anchor) on the anchors table;
// cfg gives the chain reader and the tuning (its Client and Table are
// filled from the App; a nil Observer is the App's AnchorMetrics).
func (a *App) Anchor(cfg anchor.Config) (*anchor.Ledger, error) {
	cfg.Client, cfg.Table = a.DynamoDB, a.Names.AnchorsTable()
	if cfg.Logger == nil {
		cfg.Logger = a.Logger
	}
	if cfg.Observer == nil {
		m, err := a.AnchorMetrics()
		if err != nil {
			return nil, fmt.Errorf("anchor: %w", err)
		}
		cfg.Observer = m
	}
	return anchor.New(cfg)
}
