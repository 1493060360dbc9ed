package subscribers

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

// The app-table rows the handlers read and write (docs/tables.md lists every
// table's rows). The app table has pk and sk and no TTL; its stream turns
// every change into a row.<entity>.<insert|modify|remove> envelope on the
// record-change lane.
//
//	pet row:     pk = "PET#<tenant>#<pet_id>"   sk = "PET"               (petKey)
//	             entity = "pet", tenant, pet_id, tag_status = "ordered",
//	             tag_order_id, tag_ordered_at (S, engine.TimeLayout), tag_event_id
//	intake row:  pk = "PET#<tenant>#<pet_tag>"  sk = "INTAKE#<YYYY-MM-DD>"  (intakeKey)
//	             entity = "intake", tenant, pet_tag, day, updated_at,
//	             grams (N), meals (N), event_ids (SS)
//	contact row: pk = "CONTACT#<tenant>"        sk = "OWNER"             (contactKey)
//	             entity = "contact", tenant, channel, address
//	support row: pk = "FAULT#<tenant>#<bowl>"   sk = "SUPPORT"           (supportKey)
//	             entity = "support_window", tenant, bowl, window_start (N, unix ms),
//	             event_id (the fault e-mailed), reported (N), coalesced (N)
//
// mark_tag_ordered sets the pet row's tag attributes (creating the row if
// need be) on the condition that tag_order_id is another order.
// record_intake adds each meal to the day's intake row on the condition that
// its event id is not yet in event_ids, or creates the row in the
// transaction of pet.appetite_dropped on the condition that it is absent;
// it reads a pet's recent days with one Query on the pet's partition
// (sk BETWEEN two IntakeSK values, which leaves the pet row out).
//
// notify_support opens a bowl's window on the condition that none is open
// (window_start at least SupportWindow ago) and e-mails; a fault in an open
// window only adds one to coalesced, on the condition that the window is
// the one it read.
//
// Nothing in this repository writes contact rows: the owner's app or an
// operator does. Directory.Owner reads them, and contact_changes refreshes
// its cache from row.contact.modify.
const (
	// PetSK is the sort key of a pet's own row.
	PetSK = "PET"
	// EntityPet is the entity attribute of pet rows.
	EntityPet = "pet"
	// EntityIntake is the entity attribute of daily intake rows.
	EntityIntake = "intake"
	// ContactSK is the sort key of a tenant's owner contact.
	ContactSK = "OWNER"
	// EntityContact is the entity attribute of contact rows.
	EntityContact = "contact"
	// SupportSK is the sort key of a bowl's device-fault window row.
	SupportSK = "SUPPORT"
	// EntitySupportWindow is the entity attribute of support rows.
	EntitySupportWindow = "support_window"

	petPKPrefix     = "PET#"
	intakeSKPrefix  = "INTAKE#"
	contactPKPrefix = "CONTACT#"
	faultPKPrefix   = "FAULT#"
)

// PetPK is the app-table partition key of a pet's rows: its own row and its
// intake rows.
func PetPK(tenant, petID string) string { return petPKPrefix + tenant + "#" + petID }

// IntakePK is the partition key of a pet's intake rows.
func IntakePK(tenant, petTag string) string { return PetPK(tenant, petTag) }

// IntakeSK is the sort key of the intake row of day (YYYY-MM-DD).
func IntakeSK(day string) string { return intakeSKPrefix + day }

// ContactPK is the partition key of tenant's owner contact.
func ContactPK(tenant string) string { return contactPKPrefix + tenant }

// SupportPK is the partition key of a bowl's device-fault window row.
func SupportPK(tenant, bowl string) string { return faultPKPrefix + tenant + "#" + bowl }

func supportKey(tenant, bowl string) map[string]types.AttributeValue {
	return attr.Key(SupportPK(tenant, bowl), SupportSK)
}

func petKey(tenant, petID string) map[string]types.AttributeValue {
	return attr.Key(PetPK(tenant, petID), PetSK)
}

func intakeKey(tenant, petTag, day string) map[string]types.AttributeValue {
	return attr.Key(IntakePK(tenant, petTag), IntakeSK(day))
}

func contactKey(tenant string) map[string]types.AttributeValue {
	return attr.Key(ContactPK(tenant), ContactSK)
}
