package eventsource

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// LambdaHandler adapts h to a Lambda function behind a Kinesis event
// source mapping with ReportBatchItemFailures: the event's records become
// Records (ShardID from the eventID "<shard id>:<sequence number>"), a
// failedFrom becomes the one batchItemFailures entry, and an error is the
// invocation's error (Lambda retries the whole batch).
func LambdaHandler(h Handler) func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	return func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		recs := make([]Record, 0, len(ev.Records))
		for _, er := range ev.Records {
			shard, _, _ := strings.Cut(er.EventID, ":")
			recs = append(recs, Record{
				Data: er.Kinesis.Data, PartitionKey: er.Kinesis.PartitionKey, SequenceNumber: er.Kinesis.SequenceNumber,
				ShardID: shard, ArrivalTime: er.Kinesis.ApproximateArrivalTimestamp.Time,
			})
		}
		var resp events.KinesisEventResponse
		failedFrom, err := h(ctx, recs)
		if err != nil {
			return resp, err
		}
		if failedFrom != "" {
			resp.BatchItemFailures = []events.KinesisBatchItemFailure{{ItemIdentifier: failedFrom}}
		}
		return resp, nil
	}
}

// StartLambda runs h as the Lambda function until the runtime stops it.
// Call it only inside Lambda (InLambda).
func StartLambda(h Handler) { lambda.Start(LambdaHandler(h)) }

// RuntimeAPIEnv is set by Lambda in a function's environment.
const RuntimeAPIEnv = "AWS_LAMBDA_RUNTIME_API"
