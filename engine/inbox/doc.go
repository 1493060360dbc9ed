// Package inbox is the idempotent inbox of the DURABLE lane: one row per
// (event, subscription) in the inbox table, keyed
// IDEMP#<event_id>:<subscription>, that makes an at-least-once queue give
// an exactly-once effect.
//
// The row is a small state machine (docs/contract.md, "The inbox claim"):
//
//	absent ──Claim──▶ pending(lease) ──Complete──▶ completed   (final)
//	                     │  ▲   │
//	          Release    │  │   └──MarkDead──▶ dead ──ReleaseDead──▶ dead(released)
//	  (retryable error)  ▼  │ Claim after                               │
//	               pending(expired) lease expiry ◀──────── Claim ───────┘
//
// Claim is one conditional write that succeeds when the row is absent, or
// pending with an expired lease (its worker crashed or hung), or dead and
// released by an operator's redrive. Every claim gets a fresh token; Complete,
// Release, MarkDead and Extend are conditional on that token, so a worker
// whose lease was taken over cannot overwrite the new holder's record: it
// gets ErrLeaseLost.
//
// # Caveats
//
// Lease expiry is compared with the claiming worker's clock; keep worker
// clocks within a small fraction of the lease. Rows expire through the
// table's TTL attribute "ttl" (Config.TTL after the last write).
package inbox
