// Package seedinbox is the seed article's inbox, exactly as its code has
// it, kept only as a measured baseline for `./scripts/chaos`, whose seed
// column's workers (cloud/bench/chaos/seedworker) run it (docs/chaos.md).
// Do not use it for real work: engine/inbox and engine/worker replace it.
//
// Proving ground: a baseline, never linked into a product; only the chaos
// harness runs it (docs/README.md, "The proving ground").
//
// The article's delivery loop, per message and per matching DURABLE
// subscription:
//
//	if !Claim(key)            // PutItem, attribute_not_exists(pk)
//	    continue              // someone already has it
//	err := handler(env)
//	if err == nil { MarkCompleted(key) }
//	else { MarkDead(key, err); dead_letters.record(env, sub, err) }
//	... then the message is deleted
//
// Messages are handled one by one, in the order of each receive. A claim
// that fails for any reason other than the condition (throttling, a
// timeout) escapes the loop: the rest of the receive is left in flight and
// reappears after the visibility timeout; SQS moves a message to the
// dead-letter queue after maxReceiveCount such receives. Redrive moves
// every DLQ message back to the events queue and touches no claim.
//
// # Caveats (the article's flaws, which the tests demonstrate)
//
//   - A crash between Claim and MarkCompleted leaves the row pending for
//     its TTL: every redelivery finds the row, skips the handler and
//     deletes the message. The run is lost.
//   - The first error of a handler, retryable or not, marks the row dead
//     and deletes the message: the queue's maxReceiveCount never applies.
//   - Redrive moves messages back, but their dead (or pending) rows refuse
//     the claim again, so the handler is skipped: the redrive does nothing.
package seedinbox
