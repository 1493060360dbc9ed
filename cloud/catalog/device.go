package catalog

import (
	"fmt"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
)

// Ingested is what ingest adds to the data of every device event it emits
// (cloud/ingest): which thing sent it and the gateway's own id, seq and
// time for it; and, when ingest corrected a wrong gateway clock, why and by
// how much (docs/clock.md). The data itself is the edge/wire type, so a
// device event's payload is that type and Ingested side by side (the
// device payload types below).
type Ingested struct {
	Thing         string    `json:"thing"`
	DeviceEventID string    `json:"device_event_id"`
	DeviceSeq     uint64    `json:"device_seq"`
	DeviceAt      time.Time `json:"device_at"`
	// ClockFix is ingest's reason (ClockAhead or ClockUnset) and
	// ClockSkewMS the gateway's clock minus the receive time; both are
	// present exactly when ingest corrected the times.
	ClockFix    string `json:"clock_fix,omitempty"`
	ClockSkewMS *int64 `json:"clock_skew_ms,omitempty"`
}

// The device event payloads: the gateway's data (edge/wire, the one home
// of its fields and bounds) and what ingest adds. Decode[MealFinished] and
// the rest read a chained device event.
type (
	MealFinished struct {
		wire.MealFinished
		Ingested
	}
	Refilled struct {
		wire.Refilled
		Ingested
	}
	FoodLow struct {
		wire.FoodLow
		Ingested
	}
	Empty struct {
		wire.Empty
		Ingested
	}
	DeviceFault struct {
		wire.DeviceFault
		Ingested
	}
	TelemetryDropped struct {
		wire.TelemetryDropped
		Ingested
	}
	CounterReset struct {
		wire.CounterReset
		Ingested
	}
)

// IngestedOf reads what ingest added to a device event (Ingested) from
// env's payload, whatever its device type, for a reader that needs only
// that (which thing, which device event). It fails for an event that is
// not a device event and for a payload that does not decode.
func IngestedOf(env engine.Envelope) (Ingested, error) {
	var in Ingested
	if _, ok := wire.DataOf(env.Type); !ok {
		return in, fmt.Errorf("decode event %s: %s is not a device event type", env.ID, env.Type)
	}
	if err := env.DecodePayload(&in); err != nil {
		return Ingested{}, fmt.Errorf("decode %s: %w", env.Type, err)
	}
	return in, nil
}

// ThingOf is the bowl a bowl event is of: a device event's Thing
// (Ingested) or a data gap's. It reads that field alone, so an event whose
// other fields do not decode is still found on its bowl. It is "" for an
// event of another type, and err says why a bowl event's thing did not
// decode.
func ThingOf(env engine.Envelope) (string, error) {
	if _, ok := wire.DataOf(env.Type); !ok && env.Type != TypeDataGap {
		return "", nil
	}
	// The key Ingested and DataGap share (TestThingOf holds them to it).
	var p struct {
		Thing string `json:"thing"`
	}
	if err := env.DecodePayload(&p); err != nil {
		return "", fmt.Errorf("decode %s: %w", env.Type, err)
	}
	return p.Thing, nil
}
