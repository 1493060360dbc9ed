package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Limits bound what a message may hold; see Config for the defaults.
type Limits struct {
	MaxPayload    int
	MaxFutureSkew time.Duration
}

// probe is decoded first, leniently, so a wrong version is reported as such
// even when the rest of a future format would not decode.
type probe struct {
	V     *json.RawMessage `json:"v"`
	Thing *string          `json:"thing"`
}

// checkEnvelope checks size, JSON syntax, version and thing, in that order.
func checkEnvelope(raw []byte, topicThing string, lim Limits) error {
	if len(raw) > lim.MaxPayload {
		return reject(ReasonOversize, "payload of %d bytes exceeds %d", len(raw), lim.MaxPayload)
	}
	var p probe
	if err := json.Unmarshal(raw, &p); err != nil {
		return reject(ReasonMalformedJSON, "%v", err)
	}
	if p.V == nil {
		return reject(ReasonBadVersion, `no "v" field; want %d`, wire.Version)
	}
	if string(*p.V) != strconv.Itoa(wire.Version) {
		return reject(ReasonBadVersion, `"v" is %s; want %d`, *p.V, wire.Version)
	}
	if p.Thing == nil || *p.Thing != topicThing {
		got := "<missing>"
		if p.Thing != nil {
			got = *p.Thing
		}
		return reject(ReasonThingMismatch, "payload thing %q, topic thing %q", got, topicThing)
	}
	return nil
}

func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return reject(ReasonMalformedJSON, "%v", err)
	}
	if dec.More() {
		return reject(ReasonMalformedJSON, "trailing data after the JSON object")
	}
	return nil
}

// DecodeEvent decodes and validates an event payload published by
// topicThing, received at now: envelope, type (one a device may send) and
// the type's data (wire.Decode).
func DecodeEvent(raw []byte, topicThing string, now time.Time, lim Limits) (wire.EventMessage, error) {
	e, _, err := decodeEvent(raw, topicThing, now, lim)
	return e, err
}

func decodeEvent(raw []byte, topicThing string, now time.Time, lim Limits) (wire.EventMessage, ClockFix, error) {
	if err := checkEnvelope(raw, topicThing, lim); err != nil {
		return wire.EventMessage{}, ClockFix{}, err
	}
	var e wire.EventMessage
	if err := decodeStrict(raw, &e); err != nil {
		return wire.EventMessage{}, ClockFix{}, err
	}
	fix := clockFix(e.SentAt, now, lim)
	gwNow := now.Add(fix.Skew) // the receipt on the gateway's clock
	switch {
	case e.Seq == 0:
		return wire.EventMessage{}, ClockFix{}, reject(ReasonInvalid, "seq is 0 or missing; seqs start at 1")
	case !wire.ValidName(e.ID):
		return wire.EventMessage{}, ClockFix{}, reject(ReasonInvalid, "%v", wire.CheckName("event id", e.ID))
	case e.At.IsZero():
		return wire.EventMessage{}, ClockFix{}, reject(ReasonInvalid, "event %s: no time (at)", e.ID)
	case e.At.After(gwNow.Add(lim.MaxFutureSkew)):
		return wire.EventMessage{}, ClockFix{}, reject(ReasonFutureTimestamp, "event %s at %s is more than %s after receipt at %s%s", e.ID, e.At.Format(time.RFC3339Nano), lim.MaxFutureSkew, gwNow.Format(time.RFC3339Nano), fix.clause())
	}
	data := e.Data
	if len(data) == 0 || string(data) == "null" {
		data = json.RawMessage(`{}`)
	}
	// The data's shape and bounds are the MQTT contract's (edge/wire);
	// its timestamps are judged on the gateway's clock, as At is.
	_, err := wire.Decode(e.Type, data, wire.DecodeOptions{Now: gwNow, MaxFutureSkew: lim.MaxFutureSkew})
	if errors.Is(err, wire.ErrUnknownType) {
		return wire.EventMessage{}, ClockFix{}, reject(ReasonUnknownType, "event %s: type %q is not a device event type", e.ID, e.Type)
	}
	if err != nil {
		return wire.EventMessage{}, ClockFix{}, reject(ReasonInvalid, "event %s: %v", e.ID, err)
	}
	e.Data = data
	return e, fix, nil
}
