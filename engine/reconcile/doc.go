// Package reconcile answers "is anything wrong?" for operators and the
// API's GET /v1/ops/reconcile: per tenant, how many events its log holds,
// whether its hash chain verifies and how many open dead letters and
// unsettled DURABLE deliveries it has; globally, open dead letters, poison
// pills, the depth of the events dead-letter queue and how many events
// reached the durable consumer and matched no subscription.
//
// A DLQ with anything in it, a dead letter, an unmatched event, a broken
// chain or unsettled work is work nobody did; the report makes each one a
// number.
//
// # Incremental
//
// Reconcile is called every minute for the life of a stack, so no call
// reads what an earlier call has checked (docs/reconcile.md). Progress
// rows in the inbox table (keys.go) keep, per tenant, the last verified
// chain position (engine.Verifier.VerifyFrom goes on from it) and a
// settled watermark with the few pairs found unsettled (InboxCheck); a
// registry keeps the tenants a bounded, resumable scan of the events
// table's heads index (one item per tenant, none per event) has found. Inbox rows expire (inbox.DefaultTTL after their last write):
// a pair once seen settled is never read again, and a missing row of an
// event older than the TTL is reported as expired, not unsettled.
//
// # Bounds
//
// Per call: one BatchGetItem for the registry; at most Config.ScanBudget
// items of the discovery scan; one Scan of the dead letters table; one
// GetQueueAttributes; and per tenant two progress GetItems, one head
// GetItem, at most Config.MaxEvents event rows for the chain and at most
// InboxCheck.MaxEvents for the settlement, and BatchGetItems for the
// inbox keys of those events and of at most InboxCheck.MaxOpen open
// pairs. Memory holds the report, the dead letters and one page of
// events per tenant at a time.
//
// # Caveats
//
// Rows up to a verified position are not read again: tampering with them
// is found by `bowline verify-chain`, which reads the whole log. A tenant
// appears once the discovery scan reaches its head, at most one pass over
// the heads index (Report.TenantScanCycles) after its first event; a
// tenant whose head row was lost before that is found only by `bowline
// verify-chain --all`, which scans the whole log. An event whose type no
// DURABLE subscription matches owes no work and counts as settled.
// An unsettled pair stays counted until its row is completed or dead;
// call reconcile at least once per inbox TTL, or a pair that settled and
// expired between two calls stays counted.
package reconcile
