// Package ingest is Bowline's MQTT ingestion of device events: it
// subscribes to the bowls' events topics as a shared subscription
// ($share/<group>/dt/bowline/+/+/events, QoS 1, persistent session) so
// several ingest processes split the load, and acknowledges a message only
// after its event is durable. Topics and payloads are the gateway's
// contract, edge/wire, the only edge package ingest imports.
//
// Telemetry is not ingest's: gateways publish it to AWS IoT topic rules
// that put it into Kinesis (cloud/rules), and cloud/durable tracks its
// seqs, raises its gaps and acknowledges it to the gateway
// (docs/telemetry-path.md). Ingest writes nothing to Kinesis.
//
//   - Events are validated against the engine catalog and a per-type schema
//     and emitted with engine.EmitEvent under the idempotency key
//     "<thing>/<id>" ('/' never occurs in a thing name or an event id,
//     wire.ValidName, so the key is unambiguous): MQTT redelivery never emits twice. A digest row written in
//     the same transaction lets a repeat with a different payload be told
//     apart from a redelivery: that is a conflict, recorded as a dead letter.
//   - Identity: the tenant comes from the topic and must be the thing's tenant
//     in the device registry (cloud/devices). Anything rejected (bad topic,
//     unknown thing, tenant mismatch, oversize, malformed JSON, wrong version,
//     thing mismatch, schema violation, far-future timestamp) is recorded as a
//     dead letter with its reason and its bytes, counted, and acknowledged,
//     so a bad message cannot loop; letters are bounded in size, per device
//     and in how long they may hold a message, and can be replayed
//     (Ingester.Replay). DynamoDB denying access or missing a table is not a
//     rejection: the message is held (docs/dead-letters.md).
//   - Gap detection: per thing the event seqs that arrived are kept as
//     intervals in the app table (pk SEQ#<thing>, sk "events", LaneEvents),
//     merged with optimistic locking so every ingest process of the group
//     shares them, and written before the message is acknowledged (one put
//     per thing per write round). A hole older than Config.GapGrace raises
//     bowl.data_gap (lane "events") once; the seqs of rejected messages are
//     not holes. A row keeps at most Config.GapMaxSpans spans.
//   - Sessions: unless Config.ClientID fixes it, a process leases one of
//     Config.Slots client ids ("<group>-<n>") in the app table before it
//     connects, so a replaced process's persistent session is resumed by
//     its successor; it stops consuming when the lease is lost. On shutdown
//     it unsubscribes first, then drains (docs/ingest-sessions.md).
//
// keys.go lists every DynamoDB row ingest writes.
//
// # Caveats
//
// An event redelivered by MQTT (say, after ingest was killed between the
// emit and the PUBACK) is emitted once: the idempotency key catches it.
//
// An unacknowledged message stays in the broker session of its client id
// until a process connects with that id again: run as many processes as
// Config.Slots. A fixed Config.ClientID is only for a process that always
// comes back under the same id.
package ingest
