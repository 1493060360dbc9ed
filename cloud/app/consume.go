package app

import (
	"context"
	"fmt"

	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/cloud/iotdata"
)

// EventSource builds the local stand-in of the telemetry stream's Lambda
// event source mapping (eventsource.TelemetryConsumer): it reads the
// telemetry stream into h, checkpoints in the inbox table and describes
// what it gives up on in telemetry-consumer-dlq. tune, when not nil,
// adjusts the config before it is validated.
func (a *App) EventSource(ctx context.Context, h eventsource.Handler, tune func(*eventsource.Config)) (*eventsource.Runner, error) {
	// What Lambda's mapping does in AWS with the function's role (read the
	// stream, send to the on-failure queue) is recorded apart from what
	// only the stand-in does (checkpoints, the queue URL).
	local, esm := a.Part(PartEventSource), a.Part(PartConsume)
	dlq, err := local.QueueURL(ctx, a.Names.TelemetryConsumerDLQ())
	if err != nil {
		return nil, fmt.Errorf("event source %s: %w", eventsource.TelemetryConsumer.Name, err)
	}
	c := eventsource.Config{
		Spec: eventsource.TelemetryConsumer, Kinesis: esm.Kinesis, Stream: a.Names.TelemetryStream(), Handler: h,
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

// TelemetryHandler is the handler `bowline consume` runs, locally and in
// Lambda.
//
// STUB until cloud/durable lands: it only logs each batch and succeeds,
// acknowledging nothing. The integrator replaces its body with an adapter
// of durable.Consumer.Handle (eventsource.Record and durable.Record have
// the same fields; Result's first failed sequence number is failedFrom).
func (a *App) TelemetryHandler() eventsource.Handler {
	log := a.Logger.With("handler", "stub until cloud/durable lands")
	return func(ctx context.Context, recs []eventsource.Record) (string, error) {
		if len(recs) > 0 {
			log.Info("telemetry batch (not consumed: stub)", "shard", recs[0].ShardID, "records", len(recs),
				"from_seq", recs[0].SequenceNumber, "to_seq", recs[len(recs)-1].SequenceNumber)
		}
		return "", nil
	}
}
