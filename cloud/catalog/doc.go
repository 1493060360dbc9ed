// Package catalog declares Bowline's event catalog: every event type, the
// component that produces it and every subscription with its lane
// (docs/contract.md, "Event catalog"). The engine refuses to emit a type
// that is not here, and `bowline catalog --check` runs engine.Catalog.Check
// on it.
//
// Handlers are not attached here: the process that runs a lane (the API for
// INLINE and LOCAL, the worker for DURABLE, the record-change consumer for
// BEST_EFFORT) binds its handlers by subscription name with Bind.
package catalog
