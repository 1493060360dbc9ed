package devices

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

// The registry row (docs/tables.md lists every table's rows).
//
// Table: the app table (pk and sk, no TTL: a device stays registered until
// an operator deletes its row). One row per thing:
//
//	pk = "DEVICE#<thing>"  sk = "DEVICE"   (PK, SK)
//	entity = "device", thing, tenant, registered_at (S, RFC 3339 nano)
//
// Register puts it on the condition that it is absent (`bowline devices
// register`); Lookup reads it, consistently, for cloud/ingest, which caches
// the answer. The app table's stream turns the insert into a
// row.device.insert envelope on the record-change lane.
const (
	// SK is the sort key of every registry row.
	SK = "DEVICE"
	// Entity is the value of the entity attribute of registry rows.
	Entity = "device"

	pkPrefix         = "DEVICE#"
	attrEntity       = "entity"
	attrThing        = "thing"
	attrTenant       = "tenant"
	attrRegisteredAt = "registered_at"
)

// PK is the app-table partition key of thing's registry row.
func PK(thing string) string { return pkPrefix + thing }

func key(thing string) map[string]types.AttributeValue { return attr.Key(PK(thing), SK) }
