package catalog

import (
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
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
