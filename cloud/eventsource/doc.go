// Package eventsource is Lambda's Kinesis event source mapping as data
// (Spec, which deploy/cloudformation/bowline.yaml's EventSourceMapping
// carries, checked by deploy/cfn's TestEventSourceMatchesSpec) and a local
// stand-in that behaves the way AWS documents it (Runner), so that
// `bowline consume` and the tests run the consumer exactly as Lambda will.
//
// The Runner lists the stream's shards, reads every shard (a child only
// after all its parents were read to their end), gathers batches of up to
// Spec.BatchSize records within Spec.MaximumBatchingWindowInSeconds, and
// hands them to a Handler, one batch at a time per shard, or per
// partition-key sub-stream when Spec.ParallelizationFactor is above 1
// (records of one key stay in order). A Handler reports the first record
// to retry (ReportBatchItemFailures) or an error (the whole batch); a
// failing batch is bisected, retried up to Spec.MaximumRetryAttempts times
// and, after that or once a record is older than
// Spec.MaximumRecordAgeInSeconds, described on the on-failure queue
// (OnFailure, the shape Lambda sends) and skipped. A shard's position is
// checkpointed in the inbox table (pk ESM#<name>#<stream>#<shard>) only
// after every record up to it was handled or sent to the on-failure queue.
//
// Lambda wires the same Handler through LambdaHandler (events.KinesisEvent
// in, events.KinesisEventResponse out).
//
// # Caveats
//
// Delivery is at least once: a Runner stopped between a handler's success
// and the checkpoint hands the batch over again on restart, and a partial
// failure hands over again records of the same sub-stream after the failed
// one. docs/telemetry-path.md ("The event source") lists what is
// documented behaviour of Lambda and what the stand-in assumes.
package eventsource
