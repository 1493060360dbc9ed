package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Golden is the contract as data: testdata/messages.json and
// testdata/names.json (testdata/README.md describes the files). Contract
// tests on both sides load it with LoadGolden.
type Golden struct {
	Messages []GoldenMessage
	Names    []GoldenName
}

// GoldenMessage is one message as published, and what it must become.
type GoldenMessage struct {
	// Name describes the case.
	Name string
	// Topic is the topic it is published on.
	Topic string
	// Payload is the message, byte for byte.
	Payload []byte
	// ReceivedAt is when the cloud receives it: the clock of the
	// future-timestamp check.
	ReceivedAt time.Time
	// Parsed is the parsed topic of an accepted message.
	Parsed Topic
	// Telemetry, for an accepted telemetry message, is its decoded payload.
	Telemetry *TelemetryMessage
	// Event, for an accepted event message, is its decoded payload.
	Event *EventMessage
	// Reject, for a message ingest refuses, is the reason it gives (an
	// ingest.Reason such as "bad_version", also the dead letter's prefix).
	Reject string
	// RejectField, when set, is the field the rejection must name, such as
	// "data.pet_tag".
	RejectField string
}

// GoldenName is a name on one side of ValidName.
type GoldenName struct {
	Name  string
	Valid bool
	// Problem is the NameError.Problem of an invalid name.
	Problem string
}

// goldenFile is the JSON form of a GoldenMessage. Decoded values are
// written with the Go field names, not the wire's JSON keys, so a changed
// JSON key cannot change the expected value along with the bytes.
type goldenFile struct {
	Name        string          `json:"name"`
	Topic       string          `json:"topic"`
	Payload     json.RawMessage `json:"payload"`      // exact bytes, when they are one JSON value
	PayloadText *string         `json:"payload_text"` // exact bytes otherwise
	ReceivedAt  time.Time       `json:"received_at"`
	Parsed      *struct {
		Tenant, Thing, Kind string
	} `json:"parsed"`
	Telemetry *struct {
		V       int
		Thing   string
		Seq     uint64
		Samples []struct {
			T     time.Time
			Kind  string
			Value float64
		}
		SentAt time.Time
	} `json:"telemetry"`
	Event *struct {
		V     int
		Thing string
		Seq   uint64
		ID    string
		Type  string
		At    time.Time
		Data  json.RawMessage
		// SentAt is optional, as on the wire.
		SentAt time.Time
	} `json:"event"`
	Reject      string `json:"reject"`
	RejectField string `json:"reject_field"`
}

type goldenNameFile struct {
	Name    string `json:"name"`
	Valid   bool   `json:"valid"`
	Problem string `json:"problem"`
}

// LoadGolden reads the golden files from dir (this package's testdata/).
// It refuses a file with unknown keys or a case that is neither clearly
// accepted (parsed topic and one decoded value) nor rejected.
func LoadGolden(dir string) (Golden, error) {
	var files []goldenFile
	if err := readStrict(filepath.Join(dir, "messages.json"), &files); err != nil {
		return Golden{}, err
	}
	var names []goldenNameFile
	if err := readStrict(filepath.Join(dir, "names.json"), &names); err != nil {
		return Golden{}, err
	}
	var g Golden
	seen := map[string]bool{}
	for i, f := range files {
		m, err := f.message()
		if err != nil {
			return Golden{}, fmt.Errorf("golden message %d (%q): %w", i, f.Name, err)
		}
		if seen[m.Name] {
			return Golden{}, fmt.Errorf("golden message %d: name %q used twice", i, m.Name)
		}
		seen[m.Name] = true
		g.Messages = append(g.Messages, m)
	}
	for i, n := range names {
		if n.Valid == (n.Problem != "") {
			return Golden{}, fmt.Errorf("golden name %d (%q): want a problem exactly when invalid", i, n.Name)
		}
		g.Names = append(g.Names, GoldenName(n))
	}
	return g, nil
}

func readStrict(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("golden: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("golden %s: %w", path, err)
	}
	return nil
}

func (f goldenFile) message() (GoldenMessage, error) {
	m := GoldenMessage{Name: f.Name, Topic: f.Topic, ReceivedAt: f.ReceivedAt, Reject: f.Reject, RejectField: f.RejectField}
	switch {
	case f.Name == "" || f.Topic == "" || f.ReceivedAt.IsZero():
		return m, fmt.Errorf("name, topic and received_at are required")
	case (f.Payload == nil) == (f.PayloadText == nil):
		return m, fmt.Errorf("want exactly one of payload and payload_text")
	case f.Payload != nil:
		m.Payload = []byte(f.Payload)
	default:
		m.Payload = []byte(*f.PayloadText)
	}
	decoded := 0
	if f.Telemetry != nil {
		t := &TelemetryMessage{V: f.Telemetry.V, Thing: f.Telemetry.Thing, Seq: f.Telemetry.Seq, Samples: []Sample{}, SentAt: f.Telemetry.SentAt}
		for _, s := range f.Telemetry.Samples {
			t.Samples = append(t.Samples, Sample{T: s.T, Kind: s.Kind, Value: s.Value})
		}
		m.Telemetry = t
		decoded++
	}
	if f.Event != nil {
		e := *f.Event
		m.Event = &EventMessage{V: e.V, Thing: e.Thing, Seq: e.Seq, ID: e.ID, Type: e.Type, At: e.At, Data: e.Data, SentAt: e.SentAt}
		decoded++
	}
	if f.Parsed != nil {
		m.Parsed = Topic{Tenant: f.Parsed.Tenant, Thing: f.Parsed.Thing, Kind: f.Parsed.Kind}
	}
	switch {
	case f.RejectField != "" && f.Reject == "":
		return m, fmt.Errorf("reject_field belongs to a rejected message")
	case f.Reject != "" && (decoded != 0 || f.Parsed != nil):
		return m, fmt.Errorf("a rejected message has no parsed topic or decoded value")
	case f.Reject == "" && (decoded != 1 || f.Parsed == nil):
		return m, fmt.Errorf("an accepted message needs its parsed topic and exactly one of telemetry and event")
	case m.Telemetry != nil && m.Parsed.Kind != KindTelemetry, m.Event != nil && m.Parsed.Kind != KindEvents:
		return m, fmt.Errorf("decoded value does not match the topic kind %q", m.Parsed.Kind)
	}
	return m, nil
}
