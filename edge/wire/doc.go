// Package wire is the MQTT contract between a Bowline gateway and the cloud:
// the topics, the payloads and the names in them. The gateway's forwarder
// (edge/forward) encodes with these types and cloud ingest (cloud/ingest)
// decodes with them; neither defines its own copy.
//
// # Topics
//
//	dt/bowline/<tenant>/<thing>/telemetry   TelemetryMessage, QoS 1 (v1)
//	dt/bowline/<tenant>/<thing>/events      EventMessage, QoS 1, by Basic Ingest to
//	                                        the events rule (BasicIngestTopic,
//	                                        EventsRule), or through the broker (v1)
//	dt/bowline/<tenant>/<thing>/status      StatusMessage, retained (the gateway's last will)
//
// Tenant and thing are names (ValidName), as is an event's id. The cloud
// takes the tenant from the topic only (the rule copies it into the
// record), never from a payload.
//
// # Payloads
//
// JSON objects carrying "v": Version. Each lane of a thing has its own seq,
// starting at 1: an event message carries one seq, a telemetry message the
// seq of its first sample (sample i has seq+i). A redelivered message
// carries the same seq, so the cloud drops duplicates by (thing, seq). Times
// are RFC 3339 in UTC; sent_at, the gateway's clock when it encoded the
// message, lets ingest correct a wrong gateway clock (docs/clock.md). A
// message is at most MaxPayload bytes.
//
// The event types a gateway publishes are the Type constants, and each has
// one data type here (MealFinished for bowl.meal_finished, ...): its json
// tags are the data fields, its bounds are in its check. Producers at the
// edge build these values; Decode is the one strict decoder cloud ingest
// applies, and subscribers read a payload with DecodeAs.
//
// The gateway's /status document (GatewayStatus) is here too: the agent
// (edge/status) serves it, and FetchStatus is its one reader, used by
// `bowline-edge status`, the cloud console and the chaos harness. It lives
// here, not in edge/status, because cloud/ may import no edge package but
// this one (internal/layout).
//
// # Golden messages
//
// testdata/ holds the contract as bytes: messages as published, the values
// they decode to, messages ingest must refuse with the reason it gives, and
// names on both sides of ValidName. The forwarder's tests encode with its
// real encoder and compare bytes; ingest's tests decode the same bytes with
// its real decoder and compare values. LoadGolden reads them.
//
// The binary telemetry batch (format 2, one payload per gateway per
// minute through Basic Ingest) is the sub-package edge/wire/batch. The
// gateways' default telemetry timing (DefaultBatchInterval,
// DefaultAckTimeout) is here as well: the cloud's consumer sizes its ack
// cadence and its gap grace from it (cloud/durable).
//
// This package uses the standard library only, so both sides can import it
// without pulling in the other's dependencies.
package wire
