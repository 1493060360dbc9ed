// Package ingest is Bowline's MQTT ingestion: it subscribes to the bowls'
// data topics as a shared subscription ($share/<group>/dt/bowline/+/+/telemetry
// and .../events, QoS 1, persistent session) so several ingest processes split
// the load, and acknowledges a message only after its data is durable. Topics
// and payloads are the gateway's contract, edge/wire, the only edge package
// ingest imports.
//
//   - Telemetry goes to the Kinesis telemetry stream: one record per MQTT
//     message (partition key = thing) carrying tenant, thing, seq, last_seq,
//     receive time and the samples (sample i has seq+i), put through a
//     cloud/telemetry Producer (batched PutRecords, failed records retried,
//     throttling backed off). The message is acknowledged when Kinesis
//     accepted its record.
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
//   - Gap detection: per thing and lane the seqs that arrived are kept as
//     intervals in the app table (pk SEQ#<thing>, sk the lane), merged
//     with optimistic locking so every ingest process of the group shares
//     them, and written before the message is acknowledged (one put per
//     lane per write round). A hole older than Config.GapGrace raises
//     bowl.data_gap once; seqs the edge reported with
//     bowl.telemetry_dropped, and those of rejected messages, are not holes.
//     A row keeps at most Config.GapMaxSpans spans.
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
// Kinesis is at-least-once: a telemetry message redelivered by MQTT (say,
// after ingest was killed between PutRecords and the PUBACK) is written
// twice. Consumers drop duplicates by (thing, seq), which every record carries.
//
// An unacknowledged message stays in the broker session of its client id
// until a process connects with that id again: run as many processes as
// Config.Slots. A fixed Config.ClientID is only for a process that always
// comes back under the same id.
package ingest
