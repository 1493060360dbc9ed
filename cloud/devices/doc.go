// Package devices is the device registry: which tenant each thing (a bowl's
// gateway, named as in its MQTT topics) belongs to. It lives in the app table,
// one row per thing:
//
//	pk = DEVICE#<thing>   sk = DEVICE   entity = device, thing, tenant, registered_at
//
// Ingest takes a message's tenant from its topic and accepts it only when the
// registry says the thing belongs to that tenant; payload fields never choose
// a tenant. `bowline devices register` writes rows. Cache serves lookups
// from memory, "not registered" included, bounded in size and age, so
// messages from unknown things cost one read per thing per UnknownTTL.
//
// # Caveats
//
// A thing belongs to one tenant. Registering it again under the same tenant is
// a no-op; under another tenant it fails with ErrOtherTenant (moving a device
// is an operator decision this package does not make).
package devices
