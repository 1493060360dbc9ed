// Package batch is the binary telemetry batch (format 2): every bowl of one
// gateway, one MQTT payload per gateway per minute, published through AWS
// IoT Basic Ingest (wire.KindBatch). docs/telemetry-path.md ("The batch")
// is the format; this package is its one implementation, for the gateway
// (Encode, Split) and for the cloud (Decode) alike.
//
// Byte 0 is Format; the rest is raw DEFLATE (RFC 1951, compress/flate at
// BestCompression) of one CBOR (RFC 8949) map with integer keys. A v1 JSON
// payload starts with '{', so IsBatch tells the two apart.
//
// # Values
//
// A sample's value is an integer with a decimal scale, Value x 10^-Scale,
// end to end: the MCU sends integer milligrams, and weight_g = 412.5 travels
// as 412500 at scale 3 or 4125 at scale 1, never as a float. Scaled turns a
// float64 into the smallest such pair. Within a batch each kind of a series
// has one scale, the largest of its samples' (Encode rescales the others),
// and one quantum, the greatest common divisor of its values' steps: a
// firmware that reports 0.1 g steps costs no more than one that reports
// grams.
//
// # Caveats
//
//   - Times are Unix milliseconds: Encode truncates At and SentAt to the
//     millisecond, and Decode returns them in UTC. Compare them with
//     time.Time.Equal.
//   - Decode returns each value at its kind's scale in the batch, which may
//     be larger than the scale it was encoded with (4125 at scale 1 may come
//     back as 412500 at scale 3): compare Float, or the value at one scale.
//   - Encode refuses what Decode would refuse: a batch round-trips, and a
//     payload Decode accepts re-encodes to the same CBOR.
//   - Decode is written for hostile input: it bounds the payload
//     (wire.MaxPayload), the inflated size (MaxInflated), things
//     (MaxThings), kinds (MaxKinds) and samples (MaxSamples), and checks
//     every name, count, varint and sum. Its errors are *FormatError.
//
// # Golden batches
//
// edge/wire/testdata/batches.json holds the format as bytes: payloads, the
// batches they decode to, and payloads Decode must refuse with the field
// and problem it names. LoadGolden reads them, so the gateway's and the
// cloud's tests hold their code to the same bytes.
//
// The package imports the standard library, edge/wire and the CBOR codec
// only (internal/layout checks it).
package batch
