package relay

// The checkpoint row (docs/tables.md lists every table's rows).
//
// Table: Config.CheckpointTable, normally the inbox table (pk only; its TTL
// attribute "ttl" is never set on these rows, so they live until deleted).
// One row per pipe and stream shard:
//
//	pk = "RELAY#<pipe>#<stream ARN>#<shard id>"   (CheckpointKey)
//	seq         S     the last sequence number SQS accepted; absent before the first
//	closed      BOOL  the shard was read to its end
//	updated_at  S     RFC 3339 with nanoseconds
//
// A plain PutItem, written only after SQS accepted every message up to seq.
// Read and written by the Relay of that pipe alone, when it starts reading a
// shard (load) and after each accepted page (save). A stream's ARN changes
// when the stream is recreated, so rows of old streams are left behind.
const (
	keyPrefix     = "RELAY#"
	attrSeq       = "seq"
	attrClosed    = "closed"
	attrUpdatedAt = "updated_at"
)

// CheckpointKey is the inbox-table key of a pipe's position in one shard.
func CheckpointKey(pipe, streamARN, shardID string) string {
	return keyPrefix + pipe + "#" + streamARN + "#" + shardID
}
