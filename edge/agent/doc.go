// Package agent wires the gateway together: firmware-bridge links in, the
// bbolt outbox in the middle (this package is the bridge's Sink), the
// detector beside it, the MQTT forwarder and the status endpoint out.
//
// # Delivery
//
// For each batch the bridge delivers, the sink skips records already
// stored (per device and boot epoch, by 32-bit serial comparison with the
// last stored Seq; a record of a new epoch is a reset counter, kept and
// reported as bowl.counter_reset, docs/clock.md), turns weight batches into
// telemetry samples, feeds weights and tag
// reads to the device's detector, and appends samples, detected events and
// the new per-device state (last epoch and Seq, detector snapshot) in one outbox
// transaction. Only when that commit is on disk does Deliver return nil and
// the bridge acknowledge the MCU. A failed append rolls the in-memory state
// back, so a retry produces the same records and event ids.
//
// # Names and text
//
// A device publishes under its entry in Config.Things, else as
// "<gateway>:<device id>" (the only names the gateway's IoT policy allows)
// when that can collide with no other thing; any other device is
// refused (ErrDeviceRefused: nothing stored, nothing acknowledged, the MCU
// keeps its readings). A fault's detail is cleaned to what ingest accepts.
// docs/contract.md, "Field bounds" and "Thing names at the gateway".
package agent
