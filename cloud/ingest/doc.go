// Package ingest is Bowline's events consumer: it reads the bowl events the
// events topic rule put into the Kinesis events stream (record format 2,
// partition key = tenant; cloud/rules.Events), behind Lambda's Kinesis
// event source in AWS and its stand-in locally (cloud/eventsource,
// `bowline ingest`), and emits each into its tenant's chain
// (docs/events-path.md). Topics and payloads are the gateway's contract,
// edge/wire, the only edge package ingest imports.
//
// Telemetry is not ingest's: the telemetry rules put it into its own
// stream, and cloud/durable tracks its seqs, raises its gaps and
// acknowledges it to the gateway (docs/telemetry-path.md).
//
//   - A batch (HandleRecords) is done only when every event in it is
//     durable: emitted (or found emitted), or dead-lettered, and its seq
//     written to its thing's seq row. An infrastructure failure is retried
//     in place for Config.HoldFor, then the record is reported as the
//     batch item failure and the event source hands it over again.
//   - Events are validated against the engine catalog and their type's data
//     decoder in the MQTT contract (wire.Decode: one Go type per device
//     event type) and emitted with engine.EmitEvent under the idempotency key
//     "<thing>/<id>" ('/' never occurs in a thing name or an event id,
//     wire.ValidName, so the key is unambiguous): a record handed over
//     twice never emits twice. The payload's digest, kept on the engine's
//     dedup row of the key (engine.Event.Fingerprint) in the same
//     transaction, lets a repeat with a different payload be told apart
//     from a redelivery: that is a conflict, recorded as a dead letter.
//   - Identity: the tenant comes from the topic (in the record, written by
//     the rule) and must be the thing's tenant in the device registry
//     (cloud/devices). Anything rejected (bad topic, unknown thing, tenant
//     mismatch, oversize, malformed JSON, wrong version, thing mismatch,
//     schema violation, far-future timestamp) is recorded as a dead letter
//     with its reason and its bytes, counted, and done, so a bad event
//     cannot loop; letters are bounded in size and per device, an
//     unregistered bowl's events are quarantined whole, and letters can be
//     replayed (Ingester.Replay). DynamoDB denying access or missing a
//     table is not a rejection: the record is retried (docs/dead-letters.md).
//   - Gap detection: per thing the event seqs that arrived are kept as
//     intervals in the app table (pk SEQ#<thing>, sk "events", LaneEvents),
//     merged with optimistic locking so every consumer shares them, and
//     written before a batch is done (one put per thing per write round). A
//     hole older than Config.GapGrace raises bowl.data_gap (lane "events")
//     once; the seqs of rejected events are not holes. A row keeps at most
//     Config.GapMaxSpans spans.
//
// keys.go lists every DynamoDB row ingest writes.
//
// # Caveats
//
// Records of one thing are handled in stream order; the things of a batch
// concurrently, so within a tenant the chain orders two things' events by
// when their emits committed.
package ingest
