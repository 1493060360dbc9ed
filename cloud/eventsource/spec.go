package eventsource

import (
	"errors"
	"fmt"
	"slices"
)

// Spec is the event source mapping's settings, named as
// AWS::Lambda::EventSourceMapping names them. The Runner applies them; the
// CloudFormation mapping carries the same values (deploy/cfn fails when
// the two differ).
type Spec struct {
	// Name identifies the mapping in checkpoints, logs and dead letters.
	Name string
	// BatchSize is the most records one invocation gets (1..10000).
	BatchSize int
	// MaximumBatchingWindowInSeconds is how long records are gathered
	// before a batch smaller than BatchSize is handed over (0..300).
	MaximumBatchingWindowInSeconds int
	// StartingPosition is where a shard without a checkpoint is read from.
	// The stand-in supports TRIM_HORIZON only.
	StartingPosition string
	// ParallelizationFactor is how many batches of one shard are in
	// flight at once, each for its own partition keys (1..10).
	ParallelizationFactor int
	// BisectBatchOnFunctionError halves a batch whose invocation failed.
	BisectBatchOnFunctionError bool
	// MaximumRetryAttempts is how often a failed batch is retried before
	// it goes to the on-failure queue; -1 is for ever (-1..10000).
	MaximumRetryAttempts int
	// MaximumRecordAgeInSeconds: a batch with an older record goes to the
	// on-failure queue instead of the handler; -1 is no limit
	// (-1, or 60..604800).
	MaximumRecordAgeInSeconds int
	// FunctionResponseTypes holds ReportBatchItemFailures when the
	// handler's failedFrom is honoured; without it a partial failure
	// counts as success, as in Lambda.
	FunctionResponseTypes []string
}

// Values of Spec fields.
const (
	TrimHorizon             = "TRIM_HORIZON"
	ReportBatchItemFailures = "ReportBatchItemFailures"
)

// TelemetryConsumer is the mapping of the telemetry stream to the
// telemetry consumer (cloud/durable), in AWS and in `bowline consume`.
//
//   - BatchSize 100: a record is one gateway's minute (a few KiB), so a
//     batch stays far below Lambda's 6 MB invocation payload, and 100
//     records are 100 gateways acknowledged per invocation.
//   - 1 s batching window: acknowledgements wait at most a second longer,
//     and a quiet shard is not invoked for every record.
//   - ParallelizationFactor 5: the consumer needs order per gateway (the
//     partition key) only; five sub-streams per shard keep that order.
//     With the function's 256 MB (0.145 vCPU each) that is 0.72 vCPU
//     and 1.25 GB per shard in flight, more than the 2 x 512 MB it
//     replaced, for about 20 % fewer GB-seconds: the handler mostly
//     waits, and waiting is billed by memory (docs/cost.md). Half of
//     Lambda's maximum of 10 stays in reserve for a hot shard.
//   - Bisect, 10 retries, 6 h: a failing batch is narrowed down to the
//     record at fault, retried with backoff, and then described on
//     telemetry-consumer-dlq so the shard moves on. Nothing is lost by it:
//     the record stays in the stream for its 7-day retention, and the
//     gateway resends what was not acknowledged.
var TelemetryConsumer = Spec{
	Name:                           "telemetry-consumer",
	BatchSize:                      100,
	MaximumBatchingWindowInSeconds: 1,
	StartingPosition:               TrimHorizon,
	ParallelizationFactor:          5,
	BisectBatchOnFunctionError:     true,
	MaximumRetryAttempts:           10,
	MaximumRecordAgeInSeconds:      6 * 3600,
	FunctionResponseTypes:          []string{ReportBatchItemFailures},
}

// EventsConsumer is the mapping of the events stream to the events
// consumer (cloud/ingest), in AWS and in `bowline ingest`
// (docs/events-path.md).
//
//   - Order: the rule's partition key is the tenant, and Lambda keeps the
//     records of one partition key in order (per shard, and per
//     sub-stream with a ParallelizationFactor), so one tenant's events
//     reach one handler call at a time, in order. The handler keeps each
//     thing's order and emits the things of a batch concurrently, so the
//     engine group-commits one tenant's events into few transactions.
//   - ParallelizationFactor 5: five batches in flight per shard, each
//     for its own tenants. At about 900 events/s (10M bowls, 8 events
//     each a day; 1,900/s at twice the mean) an on-demand stream's first
//     4 shards give 20 handler calls in flight; a batch of 100 records
//     handled in a few hundred ms is well above the rate, and one tenant
//     is bound by the engine's group commit on its chain head, not by
//     the mapping. Half of Lambda's maximum of 10 stays in reserve
//     (docs/cost.md: no setting above half its limit at 100k bowls).
//   - BatchSize 100, no batching window: an event is small (under 2 KB)
//     and should reach the chain at once; the source hands over whatever
//     a read returned.
//   - Bisect, retries for ever, records up to the stream's retention: a
//     batch fails only on an infrastructure error (a rejected event is a
//     dead letter, not a failure), and giving such a batch up would lose
//     events the gateway has already forgotten. The shard waits, in order,
//     until the error is fixed; the IteratorAge alarm pages long before a
//     record nears the 7-day retention, which is the one case where the
//     batch goes to events-consumer-dlq (metadata only).
var EventsConsumer = Spec{
	Name:                           "events-consumer",
	BatchSize:                      100,
	MaximumBatchingWindowInSeconds: 0,
	StartingPosition:               TrimHorizon,
	ParallelizationFactor:          5,
	BisectBatchOnFunctionError:     true,
	MaximumRetryAttempts:           -1,
	MaximumRecordAgeInSeconds:      604800,
	FunctionResponseTypes:          []string{ReportBatchItemFailures},
}

// ReportsItemFailures reports whether the handler's failedFrom is honoured.
func (s Spec) ReportsItemFailures() bool {
	return slices.Contains(s.FunctionResponseTypes, ReportBatchItemFailures)
}

// Validate checks the spec against the ranges Lambda documents for a
// Kinesis event source and the stand-in's own limits.
func (s Spec) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("event source %q: %s = %v: want %s: %w", s.Name, field, v, want, ErrBadSpec)
	}
	switch {
	case s.Name == "":
		return fmt.Errorf("event source: name is empty: %w", ErrBadSpec)
	case s.BatchSize < 1 || s.BatchSize > 10000:
		return bad("BatchSize", s.BatchSize, "1..10000")
	case s.MaximumBatchingWindowInSeconds < 0 || s.MaximumBatchingWindowInSeconds > 300:
		return bad("MaximumBatchingWindowInSeconds", s.MaximumBatchingWindowInSeconds, "0..300")
	case s.StartingPosition != TrimHorizon:
		return bad("StartingPosition", s.StartingPosition, TrimHorizon+" (the only one the stand-in supports)")
	case s.ParallelizationFactor < 1 || s.ParallelizationFactor > 10:
		return bad("ParallelizationFactor", s.ParallelizationFactor, "1..10")
	case s.MaximumRetryAttempts < -1 || s.MaximumRetryAttempts > 10000:
		return bad("MaximumRetryAttempts", s.MaximumRetryAttempts, "-1..10000")
	case s.MaximumRecordAgeInSeconds != -1 && (s.MaximumRecordAgeInSeconds < 60 || s.MaximumRecordAgeInSeconds > 604800):
		return bad("MaximumRecordAgeInSeconds", s.MaximumRecordAgeInSeconds, "-1 or 60..604800")
	}
	for _, t := range s.FunctionResponseTypes {
		if t != ReportBatchItemFailures {
			return bad("FunctionResponseTypes", t, ReportBatchItemFailures)
		}
	}
	return nil
}

// Sentinel errors of the package.
var (
	// ErrBadSpec marks a Spec outside the documented ranges.
	ErrBadSpec = errors.New("invalid event source spec")
	// ErrBadConfig marks a Config missing a required field.
	ErrBadConfig = errors.New("invalid event source config")
	// ErrUnknownItem marks a reported failure whose sequence number is
	// not in the batch; the whole batch counts as failed.
	ErrUnknownItem = errors.New("reported item is not in the batch")
	// ErrHandlerPanic marks a handler that panicked.
	ErrHandlerPanic = errors.New("handler panicked")
)
