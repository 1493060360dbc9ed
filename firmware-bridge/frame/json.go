package frame

import (
	"encoding/json"
	"fmt"
)

// frameJSON is the JSON form of a Frame used by the golden vectors and
// the tools: {"version":1,"type":"weight","seq":7,"uptime_ms":1000,"body":{...}}.
type frameJSON struct {
	Version  int             `json:"version"`
	Type     string          `json:"type"`
	Seq      uint32          `json:"seq"`
	UptimeMS uint32          `json:"uptime_ms"`
	Body     json.RawMessage `json:"body"`
}

// MarshalJSON renders the frame with its type name and body fields.
func (f Frame) MarshalJSON() ([]byte, error) {
	if f.Body == nil {
		return nil, fmt.Errorf("%w: no body", ErrInvalid)
	}
	body, err := json.Marshal(f.Body)
	if err != nil {
		return nil, fmt.Errorf("marshal %s body: %w", f.Body.Type(), err)
	}
	return json.Marshal(frameJSON{Version: Version, Type: f.Body.Type().String(), Seq: f.Seq, UptimeMS: f.UptimeMillis, Body: body})
}

// UnmarshalJSON parses the form MarshalJSON writes.
func (f *Frame) UnmarshalJSON(b []byte) error {
	var j frameJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("frame json: %w", err)
	}
	if j.Version != Version {
		return fmt.Errorf("frame json version %d: %w", j.Version, ErrVersion)
	}
	t, ok := TypeByName(j.Type)
	if !ok {
		return fmt.Errorf("frame json type %q: %w", j.Type, ErrType)
	}
	body, err := unmarshalBodyJSON(t, j.Body)
	if err != nil {
		return fmt.Errorf("frame json %s body: %w", j.Type, err)
	}
	*f = Frame{Seq: j.Seq, UptimeMillis: j.UptimeMS, Body: body}
	return nil
}

func unmarshalBodyJSON(t Type, b json.RawMessage) (Body, error) {
	switch t {
	case TypeHello:
		return unmarshalAs[Hello](b)
	case TypeWeight:
		return unmarshalAs[WeightBatch](b)
	case TypeTemperature:
		return unmarshalAs[Temperature](b)
	case TypeBattery:
		return unmarshalAs[Battery](b)
	case TypeTag:
		return unmarshalAs[TagSeen](b)
	case TypeLid:
		return unmarshalAs[Lid](b)
	case TypeFault:
		return unmarshalAs[Fault](b)
	case TypePong:
		return unmarshalAs[Pong](b)
	case TypeAck:
		return unmarshalAs[Ack](b)
	case TypeTare:
		return unmarshalAs[Tare](b)
	case TypeSetRate:
		return unmarshalAs[SetRate](b)
	case TypeTimeSync:
		return unmarshalAs[TimeSync](b)
	case TypePing:
		return unmarshalAs[Ping](b)
	}
	return nil, ErrType
}

func unmarshalAs[T Body](b json.RawMessage) (Body, error) {
	var v T
	if len(b) > 0 {
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
	}
	return v, nil
}
