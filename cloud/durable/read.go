package durable

import "time"

// StreamRecord is one record of the telemetry stream as any reader of it
// sees it (record format 2, docs/telemetry-path.md): the identity the rule
// took from the topic and the payload decoded, whatever its format. A
// sample's identity is (thing, Outbox, seq): readers drop the duplicates
// the stream holds by it.
type StreamRecord struct {
	Tenant, Gateway string
	ReceivedAt      time.Time
	// Format is FormatBatch or FormatV1; Outbox is the batch's outbox id,
	// V1Outbox for a v1 message.
	Format, Outbox string
	SentAt         time.Time
	Things         []StreamSeries
}

// StreamSeries is one thing's samples of a record, in seq order.
type StreamSeries struct {
	Thing   string
	Samples []StreamSample
}

// StreamSample is one reading; At is the gateway's clock, uncorrected.
type StreamSample struct {
	Seq   uint64
	At    time.Time
	Kind  string
	Value float64
}

// DecodeRecord decodes one record of the telemetry stream with the
// consumer's own decoder. It checks the format, not the identity: only
// the consumer knows the registry.
func DecodeRecord(data []byte) (StreamRecord, error) {
	e, err := decodeEnvelope(data)
	if err != nil {
		return StreamRecord{}, err
	}
	d, err := (&Consumer{codec: defaultCodec}).decodePayload(e)
	if err != nil {
		return StreamRecord{}, err
	}
	r := StreamRecord{Tenant: d.tenant, Gateway: d.gateway, ReceivedAt: d.receivedAt, Format: d.format, Outbox: d.outbox, SentAt: d.sentAt}
	for _, s := range d.series {
		ss := StreamSeries{Thing: s.thing, Samples: make([]StreamSample, len(s.samples))}
		for i, x := range s.samples {
			ss.Samples[i] = StreamSample{Seq: x.seq, At: x.at, Kind: x.kind, Value: x.value}
		}
		r.Things = append(r.Things, ss)
	}
	return r, nil
}
