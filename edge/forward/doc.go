// Package forward publishes the outbox to the cloud over MQTT with
// eclipse/paho.mqtt.golang, in the topics and payloads of edge/wire
// (docs/contract.md, "MQTT topics and payloads"; docs/telemetry-path.md,
// "The gateway").
//
// Events go QoS 1, one message per event, published before any
// telemetry, to $aws/rules/<EventsRule>/dt/bowline/<tenant>/<thing>/events
// through AWS IoT Basic Ingest (the cloud's events rule puts them into its
// events stream, docs/events-path.md), or, without an EventsRule (v1), to
// dt/bowline/<tenant>/<thing>/events through the broker. They leave the
// outbox on their PUBACK: the forwarder calls Source.Ack from the publish
// token's completion, never before.
//
// Telemetry has two wire formats (Config.Wire):
//
//   - v2, the default: every BatchInterval one binary batch
//     (edge/wire/batch) of every thing's telemetry not yet sent, split
//     under MaxPayload (a backlog goes in consecutive batches of at most
//     BatchMaxSamples, each shared among the things with data), published
//     QoS 1 through AWS IoT Basic Ingest to
//     $aws/rules/<Rule>/dt/bowline/<tenant>/<gateway>/batch. A PUBACK only
//     marks the seqs sent (in memory: after a restart everything counts as
//     unsent). The forwarder subscribes to cmd/bowline/<tenant>/<gateway>/ack
//     on every connection; an ack of this outbox instance removes the
//     seqs it names, never one above the highest sent (ApplyAck). What is
//     still unacknowledged AckTimeout after it was sent is sent again.
//   - v1: one JSON message per thing and sealed outbox batch on
//     dt/bowline/<tenant>/<thing>/telemetry, removed on its PUBACK, for a
//     cloud without the telemetry stream. A retry carries the same seq.
//
// Either way the cloud drops duplicates, by (thing, seq) in v1 and
// (thing, outbox, seq) in v2.
//
// Connection: mutual TLS when a client certificate is configured (AWS IoT
// Core: port 8883, or 443 with ALPN "x-amzn-mqtt-ca"), a persistent session
// (clean session off), keepalive, and a retained last will on
// dt/bowline/<tenant>/<thing>/status. On loss the forwarder reconnects with
// jittered exponential backoff and resends everything not PUBACKed. It uses
// a fresh paho client per connection so no message is resent twice, once
// by paho's own store and once from the outbox.
//
// Every QoS 1 publish has a PUBACK deadline (Config.PubackTimeout, default
// 20s). AWS IoT Core throttles a connection over its quotas and a
// throttled publish may get neither a PUBACK nor a disconnect; paho does
// not resend on a live connection, so the publish would hold its in-flight
// slot for ever. A publish past its deadline ends the session
// (ErrPubackTimeout); the forwarder reconnects and resends from the outbox
// everything not PUBACKed, which the cloud deduplicates.
//
// Limits default well under AWS IoT Core's per-connection quotas (100
// publishes per second, 100 unacknowledged QoS 1 publishes, 512 KiB/s):
// 20 publishes per second, 20 in flight, 128 KiB/s of payload. The message
// size defaults to AWS's 128 KB, a hard limit rather than a rate.
package forward
