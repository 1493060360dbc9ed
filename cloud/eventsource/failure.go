package eventsource

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// QueueAPI is the part of the SQS client the on-failure destination uses.
type QueueAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ QueueAPI = (*sqs.Client)(nil)

// Conditions of a FailureRecord, as Lambda names them.
const (
	ConditionRetryAttemptsExhausted = "RetryAttemptsExhausted"
	ConditionRecordAgeExceeded      = "RecordAgeExceeded"
)

// FailureRecord is the message the on-failure queue gets for a batch the
// mapping gave up on: the shape of Lambda's invocation record for a
// Kinesis source (metadata only, never the records' data), plus the
// stand-in's Mapping and LastError. The records themselves stay in the
// stream until its retention ends; read them back with GetShardIterator
// AT_SEQUENCE_NUMBER StartSequenceNumber.
type FailureRecord struct {
	RequestContext   FailureRequest  `json:"requestContext"`
	ResponseContext  FailureResponse `json:"responseContext"`
	Version          string          `json:"version"`
	Timestamp        time.Time       `json:"timestamp"`
	KinesisBatchInfo BatchInfo       `json:"KinesisBatchInfo"`
	// Mapping and LastError are the stand-in's own: which mapping gave up
	// and the last error the handler returned.
	Mapping   string `json:"mapping,omitempty"`
	LastError string `json:"lastError,omitempty"`
}

// FailureRequest says why the batch was given up.
type FailureRequest struct {
	RequestID              string `json:"requestId"`
	FunctionARN            string `json:"functionArn"`
	Condition              string `json:"condition"`
	ApproximateInvokeCount int    `json:"approximateInvokeCount"`
}

// FailureResponse is the last invocation's outcome.
type FailureResponse struct {
	StatusCode      int    `json:"statusCode"`
	ExecutedVersion string `json:"executedVersion"`
	FunctionError   string `json:"functionError,omitempty"`
}

// BatchInfo names the records: shard and first and last sequence numbers.
type BatchInfo struct {
	ShardID                         string    `json:"shardId"`
	StartSequenceNumber             string    `json:"startSequenceNumber"`
	EndSequenceNumber               string    `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord time.Time `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  time.Time `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int       `json:"batchSize"`
	StreamARN                       string    `json:"streamArn"`
}

// failureRecord describes recs (one shard's, in order) under condition.
func (r *Runner) failureRecord(shard string, recs []Record, condition string, invokes int, lastErr string) FailureRecord {
	first, last := recs[0], recs[len(recs)-1]
	fr := FailureRecord{
		RequestContext: FailureRequest{
			RequestID: fmt.Sprintf("%s-%s-%s", r.cfg.Spec.Name, shard, first.SequenceNumber), FunctionARN: r.cfg.FunctionARN,
			Condition: condition, ApproximateInvokeCount: invokes,
		},
		ResponseContext: FailureResponse{StatusCode: 200, ExecutedVersion: "$LATEST"},
		Version:         "1.0",
		Timestamp:       r.cfg.Now().UTC(),
		KinesisBatchInfo: BatchInfo{
			ShardID: shard, StartSequenceNumber: first.SequenceNumber, EndSequenceNumber: last.SequenceNumber,
			ApproximateArrivalOfFirstRecord: first.ArrivalTime.UTC(), ApproximateArrivalOfLastRecord: last.ArrivalTime.UTC(),
			BatchSize: len(recs), StreamARN: r.streamARN(),
		},
		Mapping:   r.cfg.Spec.Name,
		LastError: lastErr,
	}
	if lastErr != "" {
		fr.ResponseContext.FunctionError = "Unhandled"
	}
	return fr
}

// sendFailure puts fr on the on-failure queue, retrying until SQS takes it
// or ctx ends: the batch is skipped only once it is described.
func (r *Runner) sendFailure(ctx context.Context, fr FailureRecord) error {
	body, err := json.Marshal(fr)
	if err != nil {
		return fmt.Errorf("encode failure record of shard %s: %w", fr.KinesisBatchInfo.ShardID, err)
	}
	for attempt := 0; ; attempt++ {
		_, err := r.cfg.OnFailure.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(r.cfg.OnFailureURL), MessageBody: aws.String(string(body))})
		if err == nil {
			r.log.Error("batch given up; described on the on-failure queue", "shard", fr.KinesisBatchInfo.ShardID,
				"condition", fr.RequestContext.Condition, "from_seq", fr.KinesisBatchInfo.StartSequenceNumber,
				"to_seq", fr.KinesisBatchInfo.EndSequenceNumber, "records", fr.KinesisBatchInfo.BatchSize, "last_error", fr.LastError)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Warn("send to the on-failure queue failed; retrying", "shard", fr.KinesisBatchInfo.ShardID, "err", err)
		if err := r.cfg.Retry.Wait(ctx, attempt); err != nil {
			return err
		}
	}
}
