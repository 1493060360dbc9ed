package anchor

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
)

// The rows of the anchors table (Config.Table; pk and sk, no stream, no
// TTL: anchors are kept for good). docs/tables.md lists every table's rows.
//
//	anchor:   pk = "ANCHOR#<t>"  sk = seq as 20 zero-padded digits
//	          tenant, seq (N), hash, prev_seq (N: the anchor before it,
//	          0 for the first), anchored_at (S, engine.TimeLayout)
//	registry: pk = "TENANTS"     sk = "<t>"
//	          tenant, registered_at (S, engine.TimeLayout)
//
// Both are put on the condition that they are absent and never updated or
// deleted: the table is append-only. Written only by Ledger (`bowline
// anchor`, the AnchorRole of the deploy template); read by Ledger.Verify
// and Ledger.Tenants (`bowline verify-chain`).
const (
	attrTenant       = engine.AttrTenant
	attrSeq          = engine.AttrSeq
	attrHash         = engine.AttrHash
	attrPrevSeq      = "prev_seq"
	attrAnchoredAt   = "anchored_at"
	attrRegisteredAt = "registered_at"

	anchorPKPrefix = "ANCHOR#"
	// RegistryPK is the partition of the tenant registry.
	RegistryPK = "TENANTS"
)

// AnchorPK is the partition key of tenant's anchors.
func AnchorPK(tenant string) string { return anchorPKPrefix + tenant }

func anchorKey(tenant string, seq uint64) map[string]types.AttributeValue {
	return attr.Key(AnchorPK(tenant), engine.SeqSK(seq))
}

func registryKey(tenant string) map[string]types.AttributeValue {
	return attr.Key(RegistryPK, tenant)
}
