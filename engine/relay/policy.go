package relay

import "time"

// FailurePolicy is what happens to a record SQS will not take. The relay
// applies Failure; the CloudFormation Pipes carry the same values
// (MaximumRetryAttempts, MaximumRecordAgeInSeconds,
// OnPartialBatchItemFailure and a DeadLetterConfig), and deploy/cfn's
// TestPipesFailLikeRelay fails when the two drift apart.
type FailurePolicy struct {
	// MaxRetryAttempts is how often a record SQS refused is sent again
	// before it becomes a dead letter (the Pipe's MaximumRetryAttempts).
	MaxRetryAttempts int
	// MaxRecordAge is the age past which a record is dead-lettered instead
	// of sent (the Pipe's MaximumRecordAgeInSeconds): 23 hours, an hour
	// before DynamoDB Streams' 24-hour retention would trim it unseen.
	MaxRecordAge time.Duration
	// OnPartialBatchItemFailure is the Pipe's setting: AUTOMATIC_BISECT
	// halves a failing batch until the failing record is alone. The relay
	// needs no bisecting: SQS names the failed entries of a batch.
	OnPartialBatchItemFailure string
}

// Failure is the failure policy of every pipe, local and in AWS.
var Failure = FailurePolicy{
	MaxRetryAttempts:          10,
	MaxRecordAge:              23 * time.Hour,
	OnPartialBatchItemFailure: "AUTOMATIC_BISECT",
}

// Dead-letter conditions, as an EventBridge Pipe names them in the
// dead-letter messages of a stream source.
const (
	// ConditionRetryAttemptsExhausted: SQS refused the record on every one
	// of 1+MaxRetryAttempts sends.
	ConditionRetryAttemptsExhausted = "RetryAttemptsExhausted"
	// ConditionRecordAgeExceeded: the record was older than MaxRecordAge.
	ConditionRecordAgeExceeded = "RecordAgeExceeded"
	// ConditionUnsendable: no send can succeed (a body over SQS's size
	// limit); the Pipe reaches the same end after its retries.
	ConditionUnsendable = "Unsendable"
)

// SourcePolicy is how a Pipe reads its stream: the DynamoDBStreamParameters
// BatchSize and ParallelizationFactor of the CloudFormation Pipe that
// targets a FIFO queue (deploy/cfn's TestEventsPipeKeepsTenantOrder
// checks the template against it, and drives a model of the Pipe through
// a partial failure).
type SourcePolicy struct {
	// BatchSize is the records per batch, that is per SendMessageBatch.
	// A Pipe retries only the entries of a batch that failed
	// (docs/relay.md, "The events Pipe"), so a batch holding two
	// records of one tenant can land them out of order. The relay keeps
	// one message per group per batch (send); a Pipe has no such setting,
	// so its batch is one record.
	BatchSize int
	// ParallelizationFactor is the batches a Pipe runs at once per shard
	// (1-10). Concurrent batches of one shard split its records by
	// partition key, each key's in order, and the events table's
	// partition key is the tenant's, so per-tenant order holds; it gives
	// back the throughput batch size 1 takes away.
	ParallelizationFactor int
}

// EventsSource is the events Pipe's source policy: one record per batch,
// ten batches at once per shard.
var EventsSource = SourcePolicy{BatchSize: 1, ParallelizationFactor: 10}
