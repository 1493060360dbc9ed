package forward

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
)

// topic is the topic of thing's kind messages under the configured tenant.
func (c Config) topic(thing, kind string) string {
	return wire.Topic{Tenant: c.Tenant, Thing: thing, Kind: kind}.String()
}

// eventsTopic is where thing's events go: by Basic Ingest to EventsRule,
// or, without one, through the broker on its events topic.
func (c Config) eventsTopic(thing string) string {
	t := wire.Topic{Tenant: c.Tenant, Thing: thing, Kind: wire.KindEvents}
	if c.EventsRule == "" {
		return t.String()
	}
	return wire.BasicIngestTopic(c.EventsRule, t)
}

// encodeTelemetry encodes b as sent at sentAt (zero: no sent_at).
func encodeTelemetry(b outbox.Batch, sentAt time.Time) ([]byte, error) {
	m := wire.TelemetryMessage{V: wire.Version, Thing: b.Thing, Seq: b.First, Samples: make([]wire.Sample, len(b.Samples)), SentAt: sentAt.UTC()}
	for i, r := range b.Samples {
		m.Samples[i] = wire.Sample{T: r.At.UTC(), Kind: r.Type, Value: r.Value}
	}
	p, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode telemetry %s seq %d: %w", b.Thing, b.First, err)
	}
	return p, nil
}

// encodeEvent encodes r as sent at sentAt (zero: no sent_at).
func encodeEvent(r outbox.Record, sentAt time.Time) ([]byte, error) {
	data := json.RawMessage(r.Data)
	if len(data) == 0 {
		data = json.RawMessage(`{}`)
	}
	p, err := json.Marshal(wire.EventMessage{V: wire.Version, Thing: r.Thing, Seq: r.Seq, ID: r.ID, Type: r.Type, At: r.At.UTC(), Data: data, SentAt: sentAt.UTC()})
	if err != nil {
		return nil, fmt.Errorf("encode event %s seq %d: %w", r.Thing, r.Seq, err)
	}
	return p, nil
}

func encodeStatus(thing, state string) []byte {
	p, _ := json.Marshal(wire.StatusMessage{V: wire.Version, Thing: thing, State: state}) // strings only: cannot fail
	return p
}

// sampleCost is an upper bound of a sample's bytes in a telemetry message:
// {"t":"<RFC3339Nano, at most 35>","kind":"<kind>","value":<number>}, and a comma.
func sampleCost(r outbox.Record) int {
	return len(`{"t":"","kind":"","value":},`) + 35 + len(r.Type) + len(strconv.FormatFloat(r.Value, 'g', -1, 64)) + 4
}

// envelopeCost bounds everything in a telemetry message but the samples.
func envelopeCost(thing string) int {
	return len(`{"v":1,"thing":"","seq":18446744073709551615,"samples":[],"sent_at":""}`) + 35 + len(thing)
}
