// Package engine is Bowline's event engine: the envelope, Emit, the
// per-tenant hash chain and its verification, lanes and subscriptions, and
// the event catalog with its contract check.
//
// # Emit
//
// An Engine commits a state change and its event together, in one DynamoDB
// TransactWriteItems: the tenant's chain head (conditional on the previous
// last_seq), the event row, an optional idempotency (dedup) row and the
// caller's own writes. Concurrent emits for one tenant inside a process are
// group-committed: several events are chained into one transaction, so the
// head row stops being a per-event serialisation point (docs/group-commit.md).
// Conflicts with other processes are retried with jittered exponential
// backoff until the caller's context ends.
//
// # Reading a log
//
// Log reads a tenant's log without its caller knowing the key layout:
// After yields the events after a seq as an iterator (strongly consistent
// Query pages unless ReadOptions.Eventual, with an optional limit; a row
// that is not a well-formed event comes as a *RowError in its place), Event
// reads one event and Head the chain head.
//
// # The chain
//
// Every event row stores seq, prev_hash and
// hash = sha256(prev_hash || JCS(envelope)), from the Genesis value; the exact
// rule is in docs/chain.md so another language can verify it. CheckChain is
// the check itself, a pure function over a sequence of envelopes and the
// head; a Verifier joins it to a Log (VerifyChain reads a tenant's chain
// page by page and names the first bad sequence).
// A chain rewritten and resealed by someone who can write the events table
// checks out by itself; Verifier.VerifyAgainst also checks it against
// positions recorded elsewhere (engine/anchor keeps them).
//
// # Lanes
//
// INLINE handlers run inside Emit before the write (an error fails the emit
// and nothing commits); LOCAL handlers run after commit in the same process
// (errors are logged); DURABLE and BEST_EFFORT subscriptions are dispatched by
// the durable and record-change consumers in other packages, which use Match.
//
// # Caveats
//
// Payload numbers are IEEE-754 doubles, as in RFC 8785: integers beyond 2^53
// lose precision. Envelope.Seq, PrevHash and Hash are zero in INLINE handlers,
// because the sequence is only fixed when the group is committed. An INLINE
// handler runs before the transaction, so the event can still fail after it
// (a caller condition, a duplicate, a deadline): INLINE handlers should
// check and refuse, not cause effects elsewhere.
//
// An Engine keeps a small record per tenant it has emitted for (its queue and
// cached head) for the life of the process.
package engine
