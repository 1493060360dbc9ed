// Package forward publishes the outbox to the cloud over MQTT with
// eclipse/paho.mqtt.golang, in the topics and payloads of edge/wire
// (docs/contract.md, "MQTT topics and payloads"):
// events to dt/bowline/<tenant>/<thing>/events, telemetry batches to
// dt/bowline/<tenant>/<thing>/telemetry, QoS 1.
//
// A record leaves the outbox only after its PUBACK: the forwarder calls
// Source.Ack from the publish token's completion, never before. Pending
// events of every thing are published before any telemetry; a batch of
// telemetry is one sealed outbox batch, so a retry carries the same seq.
//
// Connection: mutual TLS when a client certificate is configured (AWS IoT
// Core: port 8883, or 443 with ALPN "x-amzn-mqtt-ca"), a persistent session
// (clean session off), keepalive, and a retained last will on
// dt/bowline/<tenant>/<thing>/status. On loss the forwarder reconnects with
// jittered exponential backoff and resends everything not acknowledged (the
// cloud drops duplicates by (thing, seq)). It uses a fresh paho client per
// connection so no message is resent twice, once by paho's own store and
// once from the outbox.
//
// Limits default to AWS IoT Core's: 100 unacknowledged QoS 1 publishes, 100
// publishes per second per connection, 128 KB per message.
package forward
