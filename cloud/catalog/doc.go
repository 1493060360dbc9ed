// Package catalog declares Bowline's event catalog: every event type, the
// component that produces it and every subscription with its lane
// (docs/contract.md, "Event catalog"). The engine refuses to emit a type
// that is not here, and `bowline catalog --check` runs engine.Catalog.Check
// on it.
//
// Each cloud event type has one payload type here (OrderCreated and the
// rest, payloads.go), named by its declaration: producers emit it,
// consumers decode into it with Decode, and the type's Fields are derived
// from its json tags (FieldsOf), so a field renamed on one side breaks the
// build on the other. Adding a type is its payload type, one declaration
// and its handlers. The row.* record changes carry the engine's images of
// an app-table row instead (Rows); the device types' payload types are to
// come from edge/wire, and until then their Fields are listed by hand.
// WriteMarkdown prints the catalog as docs/contract.md's tables (`bowline
// catalog --markdown`).
//
// Handlers are not attached here: the process that runs a lane (the API for
// INLINE and LOCAL, the worker for DURABLE, the record-change consumer for
// BEST_EFFORT) binds its handlers by subscription name with Bind.
package catalog
