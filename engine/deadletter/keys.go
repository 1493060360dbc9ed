package deadletter

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

// The rows of the dead_letters table (pk and sk; letters and poison pills
// carry ttl, epoch seconds, At + TTL), all written through Store
// (docs/tables.md lists every table's rows).
//
//	tenant letter:  pk = "TENANT#<tenant>"  sk = "DL#<event_id>#<subscription>"
//	poison pill:    pk = "POISON#<n>"       sk = "<at, RFC 3339 nano>#<message_id>"
//	                (n = FNV-1a of message_id mod PoisonPartitions, 00-15)
//	unmatched:      pk = "UNMATCHED"        sk = "<event type>"
//
// A letter (tenant or poison) holds error and at (S, RFC 3339 nano), and
// ttl (N), and when set tenant, event_id, type, subscription, message_id,
// group_id, body, raw_sha256 (S), raw (B), attempts, receive_count and
// raw_size (N), each bounded (bound.go); a poison pill also poison (BOOL true);
// MarkRedriven adds redriven_at (S). An unmatched counter holds count (N,
// added to) and at (S, the last count).
//
// Written by engine/worker (Record when an inbox row goes dead, RecordPoison
// for an undecodable message, CountUnmatched), by engine/redrive
// (MarkRedriven) and by any producer that rejects input it cannot turn into
// an event (Record under a subscription name of its own, or RecordPoison).
// Read by engine/redrive (ForEvent), engine/reconcile (All, Unmatched) and
// operator tools (Tenant, Poison, All).
const (
	// PoisonPK names poison pills in a letter's Key ("POISON/<sort key>");
	// PoisonPKPrefix starts the PoisonPartitions partitions they are
	// spread over, so that a flood of undecodable messages does not all
	// land on one partition's 1,000 writes a second. (Before, every pill
	// was under pk "POISON"; nothing deployed holds such rows.)
	PoisonPK       = "POISON"
	PoisonPKPrefix = "POISON#"
	// PoisonPartitions is how many partitions poison pills are spread over.
	PoisonPartitions = 16
	// UnmatchedPK is the partition of the per-type counters of events that
	// reached the durable consumer and matched no subscription: delivered
	// to nobody, which otherwise looks like success.
	UnmatchedPK = "UNMATCHED"

	tenantPKPrefix = "TENANT#"
	letterSKPrefix = "DL#"
)

// tenantPK is the partition of tenant's letters.
func tenantPK(tenant string) string { return tenantPKPrefix + tenant }

// eventLetters is the sort-key prefix of the letters of one event.
func eventLetters(eventID string) string { return letterSKPrefix + eventID + "#" }

// letterKey is the key of the letter of (eventID, subscription) of tenant.
func letterKey(tenant, eventID, subscription string) map[string]types.AttributeValue {
	return attr.Key(tenantPK(tenant), eventLetters(eventID)+subscription)
}

// poisonPK is the partition of the poison pill of messageID.
func poisonPK(messageID string) string {
	h := fnv.New32a()
	h.Write([]byte(messageID))
	return fmt.Sprintf("%s%02d", PoisonPKPrefix, h.Sum32()%PoisonPartitions)
}

// poisonPKs is every partition poison pills may be in.
func poisonPKs() []string {
	pks := make([]string, 0, PoisonPartitions)
	for i := range PoisonPartitions {
		pks = append(pks, fmt.Sprintf("%s%02d", PoisonPKPrefix, i))
	}
	return pks
}

// isPoisonPK reports whether pk is a partition of poison pills.
func isPoisonPK(pk string) bool { return strings.HasPrefix(pk, PoisonPKPrefix) }

// poisonKey is the key of the poison pill of messageID, received at.
func poisonKey(at time.Time, messageID string) map[string]types.AttributeValue {
	return attr.Key(poisonPK(messageID), at.UTC().Format(timeLayout)+"#"+messageID)
}
