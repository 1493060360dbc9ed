package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

// The rows the engine writes (docs/tables.md lists every table's rows).
//
// Events table (Config.EventsTable; pk and sk, stream NEW_AND_OLD_IMAGES, no
// TTL: the log is kept for good). Two kinds of row per tenant:
//
//	head row:  pk = "TENANT#<t>#HEAD",  sk = "HEAD"
//	           tenant, head_tenant (= tenant: the HeadsIndex key), last_seq (N),
//	           last_hash, updated_at (S, TimeLayout)
//	event row: pk = "TENANT#<t>#EVENT", sk = seq as 20 zero-padded digits
//	           id, type, tenant, correlation_id, actor, occurred_at (S, TimeLayout),
//	           payload (M), seq (N), prev_hash, hash
//
// Emit writes both in one transaction: the head row is updated on the
// condition that last_seq is still the one it read, the event row is put on
// the condition that it is absent. Event rows are only ever inserted; the
// deploy template's IAM Denies keep every role from updating or deleting
// them and from writing them or heads outside a TransactWriteItems
// (docs/chain.md, "What IAM enforces"). The relay forwards INSERT records
// of rows whose pk ends in EventPKSuffix to the events queue. Read by:
// Emit (head), Log (event rows and heads, for every reader of a tenant's
// log: the Verifier, engine/reconcile, engine/anchor and cloud/'s
// console, chaos and completeness), Verifier.Tenants (the pk of every
// row), Verifier.Heads, the relay and the worker (the stream).
//
// The key functions below are exported for what is about the layout
// itself (the IAM and pipe-filter specs and their tests, the anchors' sort
// key, a fault tool); a reader of the log uses Log and builds no key.
//
// Inbox table (Config.InboxTable; pk only, TTL attribute "ttl"). An
// idempotent emit (Event.IdempotencyKey) adds a dedup row in the same
// transaction, put on the condition that it is absent:
//
//	dedup row: pk = "EMIT#<t>#<key>"
//	           event_id, tenant, type, created_at (S, TimeLayout),
//	           ttl (N, epoch seconds: created_at + Config.DedupTTL, default 30 days),
//	           fingerprint (S, the emit's Event.Fingerprint, when it had one)
//
// Read by Emit only, to name the first event and its fingerprint in a
// DuplicateError. The inbox
// table is shared: engine/inbox, engine/relay and callers' own writes keep
// other rows there under other prefixes.
const (
	AttrPK            = attr.PK
	AttrSK            = attr.SK
	AttrID            = "id"
	AttrType          = "type"
	AttrTenant        = "tenant"
	AttrCorrelationID = "correlation_id"
	AttrActor         = "actor"
	AttrOccurredAt    = "occurred_at"
	AttrPayload       = "payload"
	AttrSeq           = "seq"
	AttrPrevHash      = "prev_hash"
	AttrHash          = "hash"
	AttrLastSeq       = "last_seq"
	AttrLastHash      = "last_hash"
	AttrUpdatedAt     = "updated_at"
	AttrEventID       = "event_id"
	AttrCreatedAt     = "created_at"
	AttrTTL           = "ttl"
	// AttrFingerprint is on dedup rows: the emit's Event.Fingerprint.
	AttrFingerprint = "fingerprint"

	// AttrHeadTenant is set on head rows only (to the tenant): the key of
	// the sparse, keys-only HeadsIndex, which therefore holds one item per
	// tenant and none per event. Emit sets it to the same value on every
	// head update, so the index is written when a head is created (or,
	// for a head older than the index, on its first update), not on
	// every emit (docs/chain.md, "Finding every tenant").
	AttrHeadTenant = "head_tenant"
	// HeadsIndex is the events table's global secondary index on
	// AttrHeadTenant (KEYS_ONLY): the list of tenants with a head.
	HeadsIndex = "heads"

	// HeadSK is the sort key of every head row.
	HeadSK = "HEAD"
	// EventPKSuffix ends the partition key of every event row.
	EventPKSuffix = "#EVENT"
	// HeadPKSuffix ends the partition key of every head row.
	HeadPKSuffix = "#HEAD"
)

const (
	tenantPKPrefix = "TENANT#"
	dedupPKPrefix  = "EMIT#"
)

// HeadPK is the partition key of tenant's chain head row.
func HeadPK(tenant string) string { return tenantPKPrefix + tenant + HeadPKSuffix }

// EventPK is the partition key of tenant's event rows.
func EventPK(tenant string) string { return tenantPKPrefix + tenant + EventPKSuffix }

// SeqSK is the sort key of the event row with sequence seq.
func SeqSK(seq uint64) string { return fmt.Sprintf("%020d", seq) }

// ParseEventKey returns the tenant and seq an event row's key names: pk
// must be EventPK(tenant) of a ValidTenant and sk SeqSK(seq) with seq >= 1,
// exactly as Emit writes them. Anything else (a look-alike such as
// "X#EVENT", "TENANT#EVENT" or "TENANT#a#b#EVENT", an sk that is not 20
// digits) fails with ErrNotEventKey naming the key.
func ParseEventKey(pk, sk string) (tenant string, seq uint64, err error) {
	rest, ok := strings.CutPrefix(pk, tenantPKPrefix)
	if ok {
		tenant, ok = strings.CutSuffix(rest, EventPKSuffix)
	}
	if !ok || !ValidTenant(tenant) {
		return "", 0, fmt.Errorf("pk %q: want %q with a valid tenant: %w", pk, EventPK("<tenant>"), ErrNotEventKey)
	}
	if len(sk) != len(SeqSK(0)) || strings.Trim(sk, "0123456789") != "" {
		return "", 0, fmt.Errorf("sk %q of pk %q: want a seq of 20 digits: %w", sk, pk, ErrNotEventKey)
	}
	seq, err = strconv.ParseUint(sk, 10, 64)
	if err != nil || seq == 0 {
		return "", 0, fmt.Errorf("sk %q of pk %q: want a seq from 1: %w", sk, pk, ErrNotEventKey)
	}
	return tenant, seq, nil
}

// DedupPK is the inbox-table key of tenant's idempotency key.
func DedupPK(tenant, key string) string { return dedupPKPrefix + tenant + "#" + key }

func headKey(tenant string) map[string]types.AttributeValue {
	return attr.Key(HeadPK(tenant), HeadSK)
}

func eventKey(tenant string, seq uint64) map[string]types.AttributeValue {
	return attr.Key(EventPK(tenant), SeqSK(seq))
}

func dedupKey(tenant, key string) map[string]types.AttributeValue {
	return attr.HashKey(DedupPK(tenant, key))
}
