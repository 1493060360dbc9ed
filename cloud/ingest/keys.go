package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The DynamoDB rows ingest writes, and the keys it hands to others that
// write rows for it. Every key is built here.
//
// Inbox table (resources.Names.InboxTable; pk only, TTL attribute "ttl"):
//
//	digest row: pk = "INGEST#<tenant>#<thing>/<device event id>"   (DigestPK)
//	            digest (S: sha256 hex of the message's RFC 8785 form),
//	            type (S), device_seq (N), received_at (S, RFC 3339 nano),
//	            ttl (N, epoch seconds: received_at + DigestTTL, 30 days)
//
// No longer written: the digest is the engine's Event.Fingerprint, kept
// on the engine's dedup row of the event's idempotency key in the emit's
// transaction (one write fewer per event, docs/cost.md), and handed back
// in the DuplicateError of a repeat: the same digest is a redelivery,
// another one a ReasonConflict. Rows written before are read
// (consistently) for a duplicate whose dedup row has no fingerprint, until
// they expire.
//
// The engine's own dedup rows in the same table (pk = "EMIT#<tenant>#<key>",
// engine.DedupPK) carry the idempotency keys ingest chooses:
//
//	device event:    <thing>/<device event id>            (IdempotencyKey)
//	bowl.data_gap:   <thing>/gap/<lane>/<from>-<to>        (gapIdempotencyKey)
//
// Neither a thing nor an event id contains '/' (wire.ValidName), so the
// first has exactly one '/' and the two never collide.
//
// App table (resources.Names.AppTable; pk and sk, no TTL):
//
//	seq tracking: pk = "SEQ#<thing>"  sk = "<lane>" (events; LaneEvents)   (gapKey)
//	              entity = "ingest_seq" (GapEntity), tenant, thing,
//	              state (S: JSON {"spans": [[from, to], ...],
//	              "noticed": {"<hole's first seq>": "<RFC 3339 nano>"}}),
//	              version (N), updated_at (S, RFC 3339 nano)
//
// Merged by every ingest process of the group with optimistic locking: put on
// attribute_not_exists(pk) for the first write, then on version = the version
// read. Written before the messages it covers are acknowledged (gaps.go).
// Rows with sk "telemetry", written while ingest also took telemetry, are
// no longer read or written (docs/events-path.md).
//
// Ingest also reads the device registry's rows there (cloud/devices:
// pk = "DEVICE#<thing>", sk = "DEVICE") but never writes them.
//
// Dead letters table (resources.Names.DeadLettersTable; engine/deadletter
// owns the layout, the bounds and the 14-day TTL, and writes the rows):
//
//	tenant letter: pk = "TENANT#<tenant>"  sk = "DL#<thing>/<kind>/<digest>#ingest"
//	poison pill:   pk = "POISON#<n>"       sk = "<at, RFC 3339 nano>#<topic>#<digest>"
//
// <digest> is the first 8 bytes of the payload's sha256 in hex (letterDigest),
// so a redelivered rejection overwrites its letter. A letter goes under the
// tenant when the thing's registered tenant is known (letterEventID), and is
// a poison pill otherwise (poisonMessageID); both have subscription
// LetterSubscription. Either holds error ("<reason>: <detail>", at most
// 1 KiB of valid UTF-8), raw (B: the payload byte for byte, whole up to the
// 128 KB MQTT limit), raw_sha256 and raw_size, message_id (the topic, or
// the pill's id), type (the event type when known), at and ttl. A device's
// summary letter past its rate limit (reject.go) has <digest> replaced by
// "rate_limited-<window start, epoch seconds>".
const (
	// DigestTTL is how long a device event's digest row is kept: as long as
	// the engine remembers the idempotency key (engine.Config.DedupTTL
	// default).
	DigestTTL = 30 * 24 * time.Hour

	// GapEntity is the entity attribute of seq-tracking rows.
	GapEntity = "ingest_seq"

	digestPKPrefix = "INGEST#"
	gapPKPrefix    = "SEQ#"
)

// IdempotencyKey is the engine idempotency key of thing's device event id.
func IdempotencyKey(thing, id string) string { return thing + "/" + id }

// gapIdempotencyKey is the engine idempotency key of the bowl.data_gap of g,
// so each (thing, lane, range) is raised once.
func gapIdempotencyKey(g DataGap) string {
	return g.Thing + "/gap/" + g.Lane + "/" + strconv.FormatUint(g.FromSeq, 10) + "-" + strconv.FormatUint(g.ToSeq, 10)
}

// DigestPK is the inbox-table key of the digest row of a device event.
func DigestPK(tenant, thing, id string) string {
	return digestPKPrefix + tenant + "#" + IdempotencyKey(thing, id)
}

// digestKey is the key of the digest row of a device event.
func digestKey(tenant, thing, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: DigestPK(tenant, thing, id)}}
}

// GapPK is the app-table partition key of thing's seq-tracking rows; the
// sort key is the lane.
func GapPK(thing string) string { return gapPKPrefix + thing }

// gapKey is the key of the seq-tracking row of thing's lane.
func gapKey(thing, lane string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: GapPK(thing)},
		"sk": &types.AttributeValueMemberS{Value: lane},
	}
}

// letterDigest names a rejected payload in its dead letter: the first 8
// bytes of its sha256, in hex.
func letterDigest(raw []byte) string {
	h := sha256.Sum256(raw)
	return hex.EncodeToString(h[:8])
}

// letterEventID is the event id of the tenant letter of a rejected message
// of thing on kind's topic.
func letterEventID(thing, kind string, raw []byte) string {
	return thing + "/" + kind + "/" + letterDigest(raw)
}

// poisonMessageID is the message id of the poison pill of a rejected message
// from topic.
func poisonMessageID(topic string, raw []byte) string {
	return topic + "#" + letterDigest(raw)
}
