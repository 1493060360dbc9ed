package detect

import (
	"fmt"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Event types the detector raises, as in docs/contract.md ("Event
// catalog"); the MQTT contract (edge/wire) defines them and their data.
const (
	TypeMealFinished = wire.TypeMealFinished
	TypeRefilled     = wire.TypeRefilled
	TypeFoodLow      = wire.TypeFoodLow
	TypeEmpty        = wire.TypeEmpty
)

// Ref names one sample: the MCU frame's sequence number and the sample's
// index within the frame.
type Ref struct {
	Seq   uint32 `json:"seq"`
	Index uint16 `json:"i"`
}

func (r Ref) String() string { return fmt.Sprintf("%d.%d", r.Seq, r.Index) }

// Event is a detected bowl event.
type Event struct {
	// ID is unique per thing and the same on every replay of the same input.
	ID string
	At time.Time
	// Data is the event's data, a wire type (wire.MealFinished,
	// wire.Refilled, wire.FoodLow or wire.Empty); it says the event type.
	Data wire.Data
}

// Type is the event type (a wire.Type constant).
func (e Event) Type() string { return e.Data.EventType() }
