// Package durable is the telemetry stream's consumer: the logic behind
// the Lambda Kinesis event source (and `bowline consume` locally) that
// reads every record the topic rules put into the telemetry stream
// (docs/telemetry-path.md) and
//
//   - decodes it: record format 2 around a gateway batch (edge/wire/batch)
//     or a v1 JSON telemetry message;
//   - holds every thing it names to the record's tenant and gateway, which
//     the rule took from the topic (the IoT policy binds them to the
//     certificate): "<gateway>" or "<gateway>:*", registered to that tenant
//     (cloud/devices). A record that fails, or does not decode, is a dead
//     letter (engine/deadletter), kept for replay, never retried;
//   - keeps per (gateway, outbox, thing) the seq spans seen in the stream,
//     drops the samples it has seen before, and acknowledges the spans to
//     the gateway (wire.AckMessage) at most once per Config.AckEvery;
//   - raises bowl.data_gap for a hole open longer than Config.GapGrace of
//     the gateway's sending time (its sent_at, each step between two
//     batches counting at most Config.GapStep, so an outage does not
//     count);
//   - rolls the new samples up per bowl and minute for the console
//     (ReadRollups).
//
// Handle's input and output are those of Lambda's Kinesis event source
// with ReportBatchItemFailures, without depending on the Lambda library.
//
// # State
//
// A gateway's spans live in one row of the telemetry table (keys.go),
// cached in the process and written with optimistic locking only before
// an ack is published, when a hole opened or closed, or when a gap was
// raised. The row is not the durability promise, the stream is: it holds
// only seqs that a record carried, so a lost or stale row makes the
// consumer acknowledge less, and the gateway resends what it was not told
// about. An ack names only what the row holds (ack.go): the gateway
// deletes what it is acknowledged, and a row without it would leave a
// hole no resend fills.
//
// # Caveats
//
//   - Calls of Handle may run at once (several shards); one gateway's
//     state and one bowl's rollup are handled under their own locks, so
//     records of one gateway from two shards (after a reshard) wait for
//     each other, and a hung call (each is bounded by CallTimeout) holds
//     up only its own gateway.
//   - An ack is due only when a record arrives (or Flush is called): a
//     gateway that goes quiet right after a batch is acknowledged when it
//     resends. Its resend timeout must be longer than AckEvery.
//   - After a lost state row (expired or unreadable), a hole that spans
//     seqs acknowledged before the loss can be raised as bowl.data_gap
//     although the gateway deleted them rightly; the idempotency key keeps
//     it to one event per hole.
//   - GapGrace must cover every loss of the same batch (each costs the
//     gateway's ack timeout) and one GapStep: at the defaults a batch
//     whose resend is lost too is not reported, a batch lost three times
//     is (docs/telemetry-path.md, "Gaps").
//   - Unwritten rollup minutes live in memory: a lost process loses up to
//     RollupEvery + RollupSlack of presentation data, never a sample.
package durable
