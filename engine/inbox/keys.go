package inbox

import (
	"strings"

	"github.com/bowline-iot/bowline/engine/attr"
)

// The inbox row (docs/tables.md lists every table's rows).
//
// Table: the inbox table (Config.Table; pk only, TTL attribute "ttl"), which
// it shares with other packages' rows under other prefixes.
//
//	pk = "IDEMP#<event_id>:<subscription>"   (Key)
//	status            S  pending | completed | dead
//	lease_expires_at  N  unix milliseconds; removed when completed or dead
//	attempts          N  claims so far
//	worker, claim_token, event_id, subscription, last_error  S
//	updated_at        S  RFC 3339 with nanoseconds
//	released_at       S  set by ReleaseDead, removed by the next Claim
//	ttl               N  epoch seconds: Config.TTL (default DefaultTTL, 35
//	                     days) after the last Claim, Complete, Release or
//	                     MarkDead
//
// Every write is an UpdateItem conditional on the state machine in the
// package comment. Written and read by Store, used by engine/worker (claims)
// and engine/redrive (ReleaseDead); engine/reconcile reads status with
// BatchGetItem to count unsettled work (an absent row of an event older
// than the TTL may have expired, so reconcile does not count it).
const (
	attrPK         = attr.PK
	attrStatus     = AttrStatus
	attrLease      = "lease_expires_at" // N, unix milliseconds
	attrAttempts   = "attempts"         // N, claims so far
	attrWorker     = "worker"
	attrToken      = "claim_token"
	attrLastError  = "last_error"
	attrEventID    = "event_id"
	attrSub        = "subscription"
	attrUpdatedAt  = "updated_at"
	attrReleasedAt = "released_at"
	attrTTL        = "ttl" // N, epoch seconds
)

// AttrStatus is the attribute of an inbox row that holds its Status.
const AttrStatus = "status"

// KeyPrefix starts the partition key of every inbox row (a scan of the
// shared table for inbox rows filters on it).
const KeyPrefix = "IDEMP#"

// Key is the inbox key of (eventID, subscription).
func Key(eventID, subscription string) string {
	return KeyPrefix + eventID + ":" + subscription
}

// SplitKey is Key's inverse: the event id and subscription of an inbox
// row's partition key; ok is false when pk is not an inbox key.
func SplitKey(pk string) (eventID, subscription string, ok bool) {
	rest, ok := strings.CutPrefix(pk, KeyPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, ":")
}
