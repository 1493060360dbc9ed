// Package worker is the durable consumer: it long-polls the events FIFO
// queue, turns each message body (an event row's NewImage in DynamoDB
// JSON) back into an engine.Envelope and runs every matching DURABLE
// subscription through the inbox, inside the event's tenant context. Events
// of one message group (one tenant) are handled strictly in order; the
// subscriptions of one event run concurrently, each with its own inbox row.
//
// For each (event, subscription) the worker claims the inbox row, runs the
// handler with a heartbeat that extends both the lease and the message's
// visibility, and then:
//
//   - success: marks the row completed;
//   - a retryable error (any error not wrapping ErrTerminal): releases the
//     claim and leaves the message to SQS, whose visibility timeout and the
//     queue's maxReceiveCount are the retry policy (RetryDelay optionally
//     shortens the wait);
//   - a terminal error (Terminal(err)), or any error on the last allowed
//     receive (ApproximateReceiveCount >= MaxReceiveCount): writes a
//     tenant-scoped dead letter and marks the row dead.
//
// A message is deleted only when every matching subscription is completed
// or dead. When one is dead the worker first forwards the message to the
// dead-letter queue (same body and group, deduplication id = message id)
// and then deletes it, so the DLQ holds exactly the events with dead work
// and `bowline redrive` can move them back.
//
// A body that does not decode is a poison pill: it is recorded under the
// global dead-letter partition and deleted at once, so it cannot block its
// group. An event no DURABLE subscription matches is logged with its type,
// counted, and deleted.
//
// # Why the worker forwards dead messages itself
//
// A subscription that goes dead before the queue's last receive (a
// terminal error) could be left for SQS to move after the remaining
// receives, but each of those would re-claim every sibling subscription for
// nothing and delay the operator's view. Forwarding at once (same body and
// group, deduplication id = message id, so a crash between send and delete
// cannot produce two DLQ copies within five minutes) puts exactly the
// events with dead work in the DLQ, which is what `bowline redrive` reads.
// SQS's own redrive still catches what the worker never finishes (a crash
// loop, an unreachable inbox): such a message arrives in the DLQ without
// dead letters and redrive moves it back as it is.
//
// # Caveats
//
// The lease must be shorter than the queue's visibility timeout, so that a
// message redelivered after a crash finds the lease expired; Run checks
// this at start. Handlers must honour their context: it ends before the
// lease does when the heartbeat cannot renew it.
package worker
