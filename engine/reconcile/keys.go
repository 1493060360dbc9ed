package reconcile

import (
	"fmt"
	"hash/fnv"
)

// The rows reconcile keeps between calls (docs/tables.md lists every
// table's rows; docs/reconcile.md explains the design).
//
// Table: the inbox table (Progress.Table; pk only), which it shares with
// other packages' rows under other prefixes. Its rows have no "ttl"
// attribute: they are kept until deleted.
//
//	tenant progress: pk = "RECONCILE#TENANT#<t>"          (tenantKey)
//	  chain_seq    N  the last chain position verified (VerifyFrom)
//	  chain_hash   S  its hash
//	  settled_seq  N  every event up to it is settled, or has its
//	                  unsettled pairs in open
//	  open         L  of S: inbox keys (IDEMP#<event id>:<subscription>)
//	                  found unsettled, at most InboxCheck.MaxOpen
//	  settle_rev   N  bumped by every settlement write (compare-and-set)
//	  updated_at   S  RFC 3339
//	tenant registry: pk = "RECONCILE#TENANTS#<00-15>"     (registryKey)
//	  tenants      SS tenants found by the discovery scan, sharded by
//	                  FNV-1a of the name
//	discovery scan:  pk = "RECONCILE#SCAN"                 (scanKey)
//	  cursor       S  where the next stretch of the scan starts (absent:
//	                  at the beginning of the table)
//	  cycles       N  completed passes over the whole events table
//	  rev          N  bumped by every write (compare-and-set)
//
// Tenants cannot contain "#" (engine.ValidTenant), so no tenant key is
// a registry or scan key. Written and read only by this package, from the
// API's GET /v1/ops/reconcile (and the web console, which runs the same
// InboxCheck).
const (
	attrChainSeq   = "chain_seq"
	attrChainHash  = "chain_hash"
	attrSettledSeq = "settled_seq"
	attrOpen       = "open"
	attrSettleRev  = "settle_rev"
	attrUpdatedAt  = "updated_at"
	attrTenants    = "tenants"
	attrCursor     = "cursor"
	attrCycles     = "cycles"
	attrRev        = "rev"

	keyPrefix = "RECONCILE#"
	// registryShards is how many rows the tenant registry is spread over:
	// a row holds at most 400 KB, about 10,000 tenant names.
	registryShards = 16
)

func tenantKey(tenant string) string { return keyPrefix + "TENANT#" + tenant }

func registryKey(shard int) string { return fmt.Sprintf("%sTENANTS#%02d", keyPrefix, shard) }

func scanKey() string { return keyPrefix + "SCAN" }

// shardOf is the registry shard of tenant.
func shardOf(tenant string) int {
	h := fnv.New32a()
	h.Write([]byte(tenant))
	return int(h.Sum32() % registryShards)
}
