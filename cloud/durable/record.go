package durable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Record is one Kinesis record as Lambda's Kinesis event source hands it
// over (the Lambda adapter and the local stand-in both build it).
type Record struct {
	// Data is the record's bytes: record format 2 (RecordVersion).
	Data []byte
	// PartitionKey is the record's partition key (the gateway, set by the
	// topic rule).
	PartitionKey string
	// SequenceNumber is the record's Kinesis sequence number; a
	// BatchItemFailure names it.
	SequenceNumber string
	// ShardID is the shard the record was read from.
	ShardID string
	// ArrivalTime is when Kinesis took the record.
	ArrivalTime time.Time
}

// Result is what Handle reports, shaped like Lambda's
// ReportBatchItemFailures response: when BatchItemFailures is not empty its
// one entry names the first record that must be read again, and the event
// source retries from there; the records before it are done.
type Result struct {
	BatchItemFailures []BatchItemFailure `json:"batchItemFailures"`
}

// BatchItemFailure names a record to retry from by its sequence number.
type BatchItemFailure struct {
	ItemIdentifier string `json:"itemIdentifier"`
}

// RecordVersion is the "v" of a Kinesis record of the telemetry stream
// (docs/telemetry-path.md, "The Kinesis record").
const RecordVersion = 2

// V1Outbox is the pseudo outbox id of v1 JSON telemetry: a v1 gateway has
// no outbox instance id and forgets on PUBACK, so its seqs are tracked
// under this id (for duplicates and gaps) and never acknowledged. A batch
// naming this outbox id is refused, so the two never mix.
const V1Outbox = "v1"

// envelope is a record of format 2 as the topic rule writes it.
type envelope struct {
	V          int    `json:"v"`
	Tenant     string `json:"tenant"`
	Gateway    string `json:"gateway"`
	ReceivedAt int64  `json:"received_at"`
	Payload    []byte `json:"payload"` // base64 in JSON
}

// decoded is one record's content in the form the consumer works on,
// whatever the payload's format.
type decoded struct {
	tenant, gateway string
	receivedAt      time.Time
	format          string // FormatBatch or FormatV1
	outbox          string
	sentAt          time.Time // zero when the payload has none
	series          []series
	payload         []byte
}

// series is one thing's samples of a record.
type series struct {
	thing   string
	samples []sample
}

// sample is one reading; at is on the gateway's clock until corrected.
type sample struct {
	seq   uint64
	at    time.Time
	kind  string
	value float64
}

// Payload formats (the metric label of records).
const (
	FormatBatch = "batch"
	FormatV1    = "v1"
)

// decodeEnvelope decodes a record's envelope; its errors are rejections.
func decodeEnvelope(data []byte) (envelope, error) {
	var e envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return e, reject(ReasonMalformed, "record: %v", err)
	}
	if e.V != RecordVersion {
		return e, reject(ReasonMalformed, "record version %d; want %d", e.V, RecordVersion)
	}
	if err := wire.CheckName("tenant", e.Tenant); err != nil {
		return e, reject(ReasonMalformed, "record: %v", err)
	}
	if err := wire.CheckName("gateway", e.Gateway); err != nil {
		return e, reject(ReasonMalformed, "record: %v", err)
	}
	if e.ReceivedAt <= 0 {
		return e, reject(ReasonMalformed, "record: received_at %d; want Unix milliseconds", e.ReceivedAt)
	}
	if len(e.Payload) == 0 {
		return e, reject(ReasonMalformed, "record: empty payload")
	}
	return e, nil
}

// decodePayload decodes e's payload, a batch or a v1 telemetry message.
func (c *Consumer) decodePayload(e envelope) (decoded, error) {
	d := decoded{tenant: e.Tenant, gateway: e.Gateway, receivedAt: time.UnixMilli(e.ReceivedAt).UTC(), payload: e.Payload}
	switch {
	case c.codec.IsBatch(e.Payload):
		b, err := c.codec.Decode(e.Payload)
		if err != nil {
			return d, reject(ReasonMalformed, "batch: %v", err)
		}
		if b.Outbox == V1Outbox || len(b.Outbox) > wire.MaxOutboxIDLen || !wire.ValidName(b.Outbox) {
			return d, reject(ReasonMalformed, "batch: outbox id %q: want a name of at most %d bytes other than %q", b.Outbox, wire.MaxOutboxIDLen, V1Outbox)
		}
		d.format, d.outbox, d.sentAt, d.series = FormatBatch, b.Outbox, b.SentAt, b.Things
		return d, nil
	case bytes.HasPrefix(bytes.TrimLeft(e.Payload, " \t\r\n"), []byte("{")):
		var m wire.TelemetryMessage
		if err := json.Unmarshal(e.Payload, &m); err != nil {
			return d, reject(ReasonMalformed, "v1 telemetry: %v", err)
		}
		if m.V != wire.Version {
			return d, reject(ReasonMalformed, "v1 telemetry: version %d; want %d", m.V, wire.Version)
		}
		if len(m.Samples) == 0 || m.Seq == 0 {
			return d, reject(ReasonMalformed, "v1 telemetry: seq %d with %d samples; want seq >= 1 and samples", m.Seq, len(m.Samples))
		}
		s := series{thing: m.Thing, samples: make([]sample, len(m.Samples))}
		for i, x := range m.Samples {
			s.samples[i] = sample{seq: m.Seq + uint64(i), at: x.T, kind: x.Kind, value: x.Value}
		}
		d.format, d.outbox, d.sentAt, d.series = FormatV1, V1Outbox, m.SentAt, []series{s}
		return d, nil
	}
	return d, reject(ReasonMalformed, "payload is neither a batch nor v1 JSON (first byte %#x)", e.Payload[0])
}

// ownedBy reports whether thing is gw's own name or one of its bowls',
// "<gw>:<bowl>" (wire.ThingSeparator).
func ownedBy(thing, gw string) bool {
	rest, ok := strings.CutPrefix(thing, gw)
	return ok && (rest == "" || (rest[0] == wire.ThingSeparator && len(rest) > 1))
}

// describe names a record for logs and letters.
func (r Record) describe() string { return fmt.Sprintf("%s/%s", r.ShardID, r.SequenceNumber) }
