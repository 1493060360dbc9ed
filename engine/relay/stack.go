package relay

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/resources"
)

// ForStack builds the relay of one of the two pipes for a stack's
// resources: EventsPipe reads the events table into events.fifo,
// RecordChangesPipe reads the app table into record-changes; checkpoints go
// to the inbox table. tune, when not nil, adjusts the config (intervals,
// logger, observer) before it is validated.
func ForStack(ctx context.Context, cfg aws.Config, names resources.Names, spec PipeSpec, tune func(*Config)) (*Relay, error) {
	var table, queue string
	switch spec.Name {
	case EventsPipe.Name:
		table, queue = names.EventsTable(), names.EventsQueue()
	case RecordChangesPipe.Name:
		table, queue = names.AppTable(), names.RecordChangesQueue()
	default:
		return nil, fmt.Errorf("relay for stack %s: unknown pipe %q (want %s or %s)", names.Stack, spec.Name, EventsPipe.Name, RecordChangesPipe.Name)
	}
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	sq := sqs.NewFromConfig(cfg)
	out, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
	if err != nil {
		return nil, fmt.Errorf("relay %s: queue %s: %w", spec.Name, queue, err)
	}
	c := Config{
		Pipe: spec, Streams: dynamodbstreams.NewFromConfig(cfg), Table: table, Tables: ddb,
		Queue: sq, QueueURL: aws.ToString(out.QueueUrl), Checkpoints: ddb, CheckpointTable: names.InboxTable(),
	}
	if tune != nil {
		tune(&c)
	}
	return New(c)
}
