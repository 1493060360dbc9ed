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
