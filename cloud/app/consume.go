package app

import (
	"context"
	"fmt"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/iotdata"
	"github.com/bowline-iot/bowline/engine/deadletter"
)

// EventSource builds the local stand-in of the telemetry stream's Lambda
// event source mapping (eventsource.TelemetryConsumer): it reads the
// telemetry stream into h, checkpoints in the inbox table and describes
// what it gives up on in telemetry-consumer-dlq. tune, when not nil,
// adjusts the config before it is validated.
func (a *App) EventSource(ctx context.Context, h eventsource.Handler, tune func(*eventsource.Config)) (*eventsource.Runner, error) {
	return a.eventSource(ctx, eventsource.TelemetryConsumer, a.Names.TelemetryStream(), a.Names.TelemetryConsumerDLQ(), PartConsume, h, tune)
}

// EventsSource builds the local stand-in of the events stream's Lambda
// event source mapping (eventsource.EventsConsumer): it reads the events
// stream into h (IngestHandler), checkpoints in the inbox table and
// describes what it gives up on in events-consumer-dlq. tune, when not
// nil, adjusts the config before it is validated.
func (a *App) EventsSource(ctx context.Context, h eventsource.Handler, tune func(*eventsource.Config)) (*eventsource.Runner, error) {
	return a.eventSource(ctx, eventsource.EventsConsumer, a.Names.EventsStream(), a.Names.EventsConsumerDLQ(), PartIngest, h, tune)
}

// eventSource builds the stand-in of spec's mapping on stream, its calls
// in AWS recorded under part (the function's role).
func (a *App) eventSource(ctx context.Context, spec eventsource.Spec, stream, dlqName, part string, h eventsource.Handler, tune func(*eventsource.Config)) (*eventsource.Runner, error) {
	// What Lambda's mapping does in AWS with the function's role (read the
	// stream, send to the on-failure queue) is recorded apart from what
	// only the stand-in does (checkpoints, the queue URL).
	local, esm := a.Part(PartEventSource), a.Part(part)
	dlq, err := local.QueueURL(ctx, dlqName)
	if err != nil {
		return nil, fmt.Errorf("event source %s: %w", spec.Name, err)
	}
	c := eventsource.Config{
		Spec: spec, Kinesis: esm.Kinesis, Stream: stream, Handler: h,
		Checkpoints: local.DynamoDB, CheckpointTable: a.Names.InboxTable(),
		OnFailure: esm.SQS, OnFailureURL: dlq, Logger: a.Logger,
	}
	if tune != nil {
		tune(&c)
	}
	return eventsource.New(c)
}

// IoTPublisher returns the HTTPS publisher of acknowledgements, signing
// with the App's credentials, for endpoint or, when empty,
// $AWS_ENDPOINT_URL_IOT_DATA_PLANE.
func (a *App) IoTPublisher(endpoint string) (*iotdata.Publisher, error) {
	p, err := iotdata.FromConfig(a.Part(PartConsume).AWS, endpoint)
	if err != nil {
		return nil, fmt.Errorf("iot publisher: %w", err)
	}
	p.Logger = a.Logger
	return p, nil
}

// TelemetryConsumer builds the telemetry stream's consumer
// (cloud/durable) with its state table, the device registry behind a
// cache (cfg.RegistryTTL), the dead-letter store, the engine (bowl.data_gap) and pub, which
// publishes the acknowledgements. cfg gives the cadences and bounds
// (start from durable.DefaultConfig); the dependencies are filled here,
// and a nil (or no-op) Observer is the App's TelemetryConsumerMetrics.
func (a *App) TelemetryConsumer(cfg durable.Config, pub durable.Publisher) (*durable.Consumer, error) {
	p := a.Part(PartConsume)
	reg, err := devices.New(p.DynamoDB, a.Names.AppTable(), cfg.Now)
	if err != nil {
		return nil, fmt.Errorf("telemetry consumer: %w", err)
	}
	ttl := cfg.RegistryTTL
	if ttl == 0 {
		ttl = durable.DefaultRegistryTTL
	}
	cache, err := devices.NewCache(reg, devices.CacheConfig{TTL: ttl, Now: cfg.Now})
	if err != nil {
		return nil, fmt.Errorf("telemetry consumer: %w", err)
	}
	letters, err := deadletter.New(p.DynamoDB, a.Names.DeadLettersTable(), cfg.Now)
	if err != nil {
		return nil, fmt.Errorf("telemetry consumer: %w", err)
	}
	cfg.DB, cfg.Table, cfg.Devices, cfg.Letters = p.DynamoDB, a.Names.TelemetryTable(), cache, letters
	cfg.Publisher, cfg.Emitter = pub, a.emitter()
	if cfg.Logger == nil {
		cfg.Logger = a.Logger.With("part", "consume")
	}
	// durable.DefaultConfig fills in the no-op observer: that is none.
	if cfg.Observer == nil || cfg.Observer == (durable.NopObserver{}) {
		cfg.Observer = a.TelemetryConsumerMetrics()
	}
	return durable.New(cfg)
}

// TelemetryHandler adapts c to the event source's handler, the same
// function `bowline consume` runs locally and in Lambda: the records pass
// field for field, and the first record Handle asks to retry is where the
// event source restarts.
func TelemetryHandler(c *durable.Consumer) eventsource.Handler {
	return func(ctx context.Context, recs []eventsource.Record) (string, error) {
		in := make([]durable.Record, len(recs))
		for i, r := range recs {
			in[i] = durable.Record{Data: r.Data, PartitionKey: r.PartitionKey, SequenceNumber: r.SequenceNumber, ShardID: r.ShardID, ArrivalTime: r.ArrivalTime}
		}
		res, err := c.Handle(ctx, in)
		if err != nil {
			return "", err
		}
		if len(res.BatchItemFailures) > 0 {
			return res.BatchItemFailures[0].ItemIdentifier, nil
		}
		return "", nil
	}
}

// IngestHandler adapts in to the events stream's event source handler,
// the same function `bowline ingest` runs locally and in Lambda.
func IngestHandler(in *ingest.Ingester) eventsource.Handler {
	return func(ctx context.Context, recs []eventsource.Record) (string, error) {
		rs := make([]ingest.Record, len(recs))
		for i, r := range recs {
			rs[i] = ingest.Record{Data: r.Data, PartitionKey: r.PartitionKey, SequenceNumber: r.SequenceNumber, ShardID: r.ShardID, ArrivalTime: r.ArrivalTime}
		}
		return in.HandleRecords(ctx, rs)
	}
}
