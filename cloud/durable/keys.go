package durable

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
)

// The DynamoDB rows the consumer writes (docs/tables.md lists every table's
// rows). Every key is built here.
//
// Telemetry table (resources.Names.TelemetryTable; pk and sk, TTL
// attribute "ttl"):
//
//	gateway state: pk = "GW#<tenant>#<gateway>"  sk = "STATE"   (stateKey)
//	               entity = "telemetry_state" (StateEntity), tenant,
//	               gateway, version (N), updated_at (S, RFC 3339 nano),
//	               state (S: JSON of storedState: per outbox id its last
//	               gateway time and clock (state.go step) and per thing
//	               the seq spans seen in the stream, the holes'
//	               first-noticed gateway and outbox-clock times and the
//	               holes raised as bowl.data_gap; the ack time before the
//	               last),
//	               ttl (N, epoch seconds: updated_at + StateTTL)
//
// Put with optimistic locking (attribute_not_exists(pk) for the first
// write, then version = the version read) only before an ack is
// published, when a hole opened or closed, or when a gap was raised
// (state.go, ack.go). Read with one
// consistent GetItem when this process first meets the gateway, and again
// when a put loses the race.
//
//	bowl rollup:   pk = "ROLLUP#<thing>"
//	               sk = "<UTC window end, 2006-01-02T15:04>#<write token>"   (rollupKey)
//	               entity = "telemetry_rollup" (RollupEntity),
//	               m (B: the minutes of the window this write carries,
//	               encodeMinutes: per kind per minute count and last
//	               value, and for weight_g min, max and sum, in varints of
//	               thousandths), c (S, JSON of storedTally, absent when
//	               empty: the write's new seqs per outbox as spans and the
//	               duplicates collapsed, completeness.go), ttl (N, epoch
//	               seconds: the window's end + RollupTTL)
//
// Each row is put once, unconditionally, and never rewritten (rollup.go):
// one per bowl per window of Config.RollupEvery, RollupSlack after the
// window ends, plus one for minutes of a window that come later (the
// write token, "<process id>-<n>", keeps them apart; a put retried after
// a lost answer uses the same token, so it is the same row). Read by
// ReadRollups with one Query, which folds a window's rows together.
// Rows of the layout before 2026-12-04 (sk = "<UTC hour, 2006-01-02T15>",
// rewritten whole) are skipped by ReadRollups and expire with their TTL.
//
// Things and tenants are wire.ValidName (no '#'), so no key of one kind
// reads as another's.
//
// The consumer also writes dead letters (engine/deadletter: pk =
// "TENANT#<tenant>", sk = "DL#<gateway>/batch/<sha256>#durable", or a
// poison pill) and reads the device registry (cloud/devices).
const (
	// StateSK is the sort key of a gateway state row.
	StateSK = "STATE"
	// StateEntity is the entity attribute of gateway state rows.
	StateEntity = "telemetry_state"
	// RollupEntity is the entity attribute of rollup rows.
	RollupEntity = "telemetry_rollup"
	// StateTTL is how long a state row lives after its last write, so the
	// rows of gateways gone for good go too: far past the stream's 7-day
	// retention, and a row that expires only makes its gateway's next
	// records acknowledged from scratch (the gateway resends what it was
	// not told about).
	StateTTL = 30 * 24 * time.Hour
	// RollupTTL is how long a rollup row lives after its window ends.
	RollupTTL = 3 * 24 * time.Hour
	// RollupLayout is the layout of a rollup row's window end, the sort
	// key's first part: a reader of the minutes since t reads the rows
	// whose windows end after t.
	RollupLayout = "2006-01-02T15:04"

	statePKPrefix  = "GW#"
	rollupPKPrefix = "ROLLUP#"
)

// StatePK is the partition key of gw's state row.
func StatePK(tenant, gw string) string { return statePKPrefix + tenant + "#" + gw }

// RollupPK is the partition key of thing's rollup rows.
func RollupPK(thing string) string { return rollupPKPrefix + thing }

func stateKey(tenant, gw string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: StatePK(tenant, gw)},
		"sk": &types.AttributeValueMemberS{Value: StateSK},
	}
}

func rollupKey(thing string, end time.Time, token string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: RollupPK(thing)},
		"sk": &types.AttributeValueMemberS{Value: end.UTC().Format(RollupLayout) + "#" + token},
	}
}

// letterEventID is the dead letter's event id of a rejected payload of gw.
func letterEventID(gw, sha string) string { return gw + "/batch/" + sha }

// gapIdempotencyKey is the engine idempotency key of a bowl.data_gap, so a
// hole is raised once however often a record is retried. '@' is no
// wire.ValidName character, so no key of cloud/ingest's
// ("<thing>/gap/<lane>/<from>-<to>") reads as one of these.
func gapIdempotencyKey(g catalog.DataGap) string {
	return g.Thing + "/gap/" + g.Lane + "@" + g.Outbox + "/" + u64(g.FromSeq) + "-" + u64(g.ToSeq)
}
