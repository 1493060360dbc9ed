package forward

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/bowline-iot/bowline/edge/outbox"
)

// Topic returns dt/bowline/<tenant>/<thing>/<kind>.
func Topic(tenant, thing, kind string) string {
	return "dt/bowline/" + tenant + "/" + thing + "/" + kind
}

// TelemetryMessage is the telemetry payload of DESIGN.md.
type TelemetryMessage struct {
	V       int      `json:"v"`
	Thing   string   `json:"thing"`
	Seq     uint64   `json:"seq"`
	Samples []Sample `json:"samples"`
}

// Sample is one reading in a TelemetryMessage.
type Sample struct {
	T     time.Time `json:"t"`
	Kind  string    `json:"kind"`
	Value float64   `json:"value"`
}

// EventMessage is the event payload of DESIGN.md.
type EventMessage struct {
	V     int             `json:"v"`
	Thing string          `json:"thing"`
	Seq   uint64          `json:"seq"`
	ID    string          `json:"id"`
	Type  string          `json:"type"`
	At    time.Time       `json:"at"`
	Data  json.RawMessage `json:"data"`
}

// StatusMessage is the payload on the status topic (retained; the last
// will carries state "offline").
type StatusMessage struct {
	V     int    `json:"v"`
	Thing string `json:"thing"`
	State string `json:"state"`
}

func encodeTelemetry(b outbox.Batch) ([]byte, error) {
	m := TelemetryMessage{V: 1, Thing: b.Thing, Seq: b.First, Samples: make([]Sample, len(b.Samples))}
	for i, r := range b.Samples {
		m.Samples[i] = Sample{T: r.At.UTC(), Kind: r.Type, Value: r.Value}
	}
	p, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode telemetry %s seq %d: %w", b.Thing, b.First, err)
	}
	return p, nil
}

func encodeEvent(r outbox.Record) ([]byte, error) {
	data := json.RawMessage(r.Data)
	if len(data) == 0 {
		data = json.RawMessage(`{}`)
	}
	p, err := json.Marshal(EventMessage{V: 1, Thing: r.Thing, Seq: r.Seq, ID: r.ID, Type: r.Type, At: r.At.UTC(), Data: data})
	if err != nil {
		return nil, fmt.Errorf("encode event %s seq %d: %w", r.Thing, r.Seq, err)
	}
	return p, nil
}

// sampleCost is an upper bound of a sample's bytes in a telemetry message:
// {"t":"<RFC3339Nano, at most 35>","kind":"<kind>","value":<number>}, and a comma.
func sampleCost(r outbox.Record) int {
	return len(`{"t":"","kind":"","value":},`) + 35 + len(r.Type) + len(strconv.FormatFloat(r.Value, 'g', -1, 64)) + 4
}

// envelopeCost bounds everything in a telemetry message but the samples.
func envelopeCost(thing string) int {
	return len(`{"v":1,"thing":"","seq":18446744073709551615,"samples":[]}`) + len(thing)
}
