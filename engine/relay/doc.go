// Package relay is Bowline's local stand-in for the EventBridge Pipes that
// carry DynamoDB Streams records to SQS: it reads every shard of a table's
// stream (parents before children), keeps the records a pipe's filter
// accepts, transforms each into an SQS message and sends them in batches of
// up to ten.
//
// The filter and transform of each pipe are data, not code: a PipeSpec holds
// the EventBridge filter pattern JSON and the JSON paths of the body, the
// FIFO message group id and the deduplication id. EventsPipe and
// RecordChangesPipe are the two pipes of the design; the CloudFormation Pipe
// in deploy/ is generated from, or checked against, the same values, so the
// relay and AWS cannot drift apart.
//
// A shard's position is checkpointed durably in the inbox table (one row per
// pipe and shard, pk RELAY#<pipe>#<stream ARN>#<shard>) and only after SQS
// accepted every message up to it. A shard's reader reads ahead of its
// sends (up to readAhead messages) and fills each batch with the first
// unsent message of up to ten groups, so one tenant's burst, which goes one
// message per call, does not hold the other tenants' messages behind it. A
// relay killed at any moment therefore resends, on restart, at most what it
// had read past its checkpoint: duplicates are possible (the FIFO
// deduplication id absorbs them for five minutes), losses are not.
//
// A record the filter accepts but the transform cannot resolve (a path that
// is absent, or not a string where a string is needed) is logged at error
// level and counted, never dropped in silence.
//
// Every record that transforms is delivered or dead-lettered, never skipped
// (docs/relay.md): a body's characters SQS refuses are \uXXXX-escaped
// (EscapeJSON, same decoded values and hash); a FIFO batch holds one message
// per group, so a failed message is resent before any later one of its
// group; batches stay within SQS's 262,144 bytes; a record SQS refuses more
// than Failure.MaxRetryAttempts times, or that can never be sent, becomes a
// DeadLetter on Config.DeadLetterURL and is counted (DeadLettered), as the
// CloudFormation Pipes do with the same Failure values.
//
// # Caveats
//
// Run one relay per pipe and stream; two relays on the same pipe would both
// deliver every record. The filter language is the subset of EventBridge
// patterns the pipes use: literal values, prefix, suffix, exists and
// anything-but; Compile rejects the rest.
package relay
