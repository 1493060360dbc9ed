// Package worker is the durable consumer: it long-polls the events FIFO
// queue, turns each message body (an event row's NewImage in DynamoDB
// JSON) back into an engine.Envelope and runs every matching DURABLE
// subscription through the inbox, inside the event's tenant context.
//
// # Concurrency and order
//
// Pollers receive while the worker holds fewer than MaxInFlight messages
// and file each message into its group's lane without waiting: a lane is a
// goroutine that handles one message group's messages (one tenant's) one
// after another, in the order SQS gave them, so a slow group never holds up
// another or the next receive. The subscriptions of one event run
// concurrently, each with its own inbox row. Events of one group are
// handled strictly in order: a failed handler is retried in place with
// the rest of its lane held behind it (on parked places, MaxParked, so
// the lane leaves its slots to other groups while it waits); a message
// given back unfinished
// stays in flight for its retry delay and the rest of its lane is given
// back, and SQS, which holds back a FIFO group's messages behind one in
// flight, hands them out again only after it. docs/delivery.md has the
// whole model.
//
// For each (event, subscription) the worker claims the inbox row, runs the
// handler for at most MaxRunTime with a heartbeat that extends the lease,
// and then:
//
//   - success: marks the row completed;
//   - a retryable error (any error not wrapping ErrTerminal, including a
//     run past MaxRunTime) with attempts left: releases the claim and
//     retries in place after a capped exponential backoff
//     (RetryBackoffBase, RetryBackoffMax), the message and the rest of its
//     lane held, so the events behind it spend no receive;
//   - a terminal error (Terminal(err)), a retryable one on the last
//     attempt (the row's Attempts >= MaxAttempts; a released dead row gets
//     MaxAttempts more), or any error on the last allowed receive
//     (ApproximateReceiveCount >= MaxReceiveCount, the safety net):
//     writes a tenant-scoped dead letter and marks the row dead.
//
// Every message the worker holds, whether being handled, queued behind
// one of its group or waiting for its delete, has its visibility extended
// before it runs out (ChangeMessageVisibilityBatch), so none reappears
// while its group is in progress. An inbox or dead-letter write that fails
// for an infrastructure reason (throttling, 5xx, a timeout) is retried
// with the message held and a capped exponential backoff
// (InfraBackoffBase, InfraBackoffMax): an outage of DynamoDB costs time,
// not receives, dead letters or order.
//
// A message is deleted (DeleteMessageBatch, batched across groups) only
// when every matching subscription is completed or dead. When one is dead
// the worker first forwards the message to the dead-letter queue (same
// body and group, deduplication id = message id) and then deletes it, so
// the DLQ holds exactly the events with dead work and `bowline redrive` can
// move them back.
//
// A body that does not decode is a poison pill: it is recorded under the
// global dead-letter partition and deleted at once, so it cannot block its
// group.
//
// # Chained rows only
//
// A body that decodes but is not a chained event row is refused the same
// way, never handled: its pk and sk must be exactly the key Emit gives
// the row (engine.ParseEventKey: "TENANT#<valid tenant>#EVENT" and the
// seq in 20 digits), its tenant and seq attributes that key's, and its
// hash the chain hash of the event after its prev_hash. The poison letter
// says "not a chained event row" and why; the Metrics count it in
// bowline_worker_not_chained_total{reason} (key, tenant, seq, hash) as
// well as in the poison pills. A row written outside Emit's transaction
// (under a look-alike key the relay's filter cannot tell apart, or by hand)
// therefore never runs a subscription. An event no DURABLE subscription matches is logged with its type,
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
// dead letters and redrive moves it back as it is; the DLQ alarm fires
// for it as for any other. It is the only way into the DLQ without a
// dead letter.
//
// # Caveats
//
// SQS keeps a message in flight for at most 12 hours from its receive
// (MaxHold); Validate refuses an attempt budget whose worst case,
// MaxAttempts*(MaxRunTime+RetryBackoffMax), exceeds half of it. A hold
// that still reaches the bound (an inbox outage retried for 12 hours) has
// its extensions refused: the group is handed out again from its head,
// one receive spent per message, and its order kept.
//
// The lease must be shorter than the queue's visibility timeout, so that a
// message redelivered after a crash finds the lease expired; Run checks
// this at start. MaxReceiveCount must match the queue's redrive policy
// (QueueMaxReceiveCount reads it), which should sit well above the single
// receive the attempt budget needs. Handlers must honour their context: it
// ends before the lease does when the heartbeat cannot renew it, and at
// MaxRunTime. One that ignores it past MaxRunTime loses its group (its
// messages are left to lapse and SQS hands them out again, possibly to
// another worker, while it still runs) and keeps Run from returning until
// it does.
package worker
