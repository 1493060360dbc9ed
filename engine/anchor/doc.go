// Package anchor records and checks chain anchors: each tenant's chain
// position (seq, hash), verified and written to a table that only the
// anchor job's role may write. A writer who can reach the events table
// could rewrite an event row, recompute every later hash and the head, and
// the chain would check out by itself; it no longer passes through the
// anchors recorded before the rewrite (docs/chain.md, "Anchors").
//
// Ledger.AnchorTenant extends a tenant's anchors: it verifies the chain
// from the newest anchor (engine.Verifier.VerifyFrom) and, when the chain
// is intact and has grown, puts a new anchor row on the condition that it
// is absent, so anchors are only ever added and the history is kept.
// Ledger.Round does that for every tenant that changed (`bowline
// anchor`): it lists tenants from the registry and the events table's
// heads index (RoundTenants) and skips a tenant whose head is anchored
// with the head's hash, so a round reads no event row of an unchanged
// tenant. Ledger.Verify checks a whole chain against every anchor of its
// tenant (`bowline verify-chain`). Ledger.Tenants finds tenants without
// trusting head rows: the registry in the anchors table plus every tenant
// with a head or event row (a scan of the whole log).
//
// # Caveats
//
// An anchor proves the log up to it; what was written after the newest
// anchor is proved only by the chain itself until the next round. The
// anchor job's own role can overwrite an anchor row (IAM cannot require
// the attribute_not_exists condition); S3 Object Lock is the stronger
// store (docs/chain.md). Verify holds a tenant's anchors in memory, about
// 100 bytes each.
package anchor
