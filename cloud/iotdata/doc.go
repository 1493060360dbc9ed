// Package iotdata publishes MQTT messages through AWS IoT's HTTPS data
// plane, without the SDK's iotdataplane module (not available to this
// build): Publish is one POST /topics/<escaped topic>?qos=<0|1> with the
// payload as body, signed with SigV4 for signing name "iotdata" by the
// SDK's own signer and credentials.
//
// LocalEndpoint accepts the same request for `bowline dev` and tests and
// publishes the payload on a local MQTT broker, so the publisher is tested
// end to end against what AWS IoT would receive.
//
// # Caveats
//
// AWS IoT limits a message payload to 128 KiB and rate-limits HTTPS
// publishes per account (docs/telemetry-path.md, "Acknowledgements over
// HTTPS"); Publish refuses a larger payload before sending and retries
// throttling (429) and server errors with backoff, within the call's
// deadline.
package iotdata
