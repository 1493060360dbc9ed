package detect

import (
	"fmt"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Event types, as in docs/contract.md ("Event catalog"); the MQTT contract
// (edge/wire) defines them.
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
	Type string
	// ID is unique per thing and the same on every replay of the same input.
	ID   string
	At   time.Time
	Data any // one of the *Data types below
}

// MealData is the data of bowl.meal_finished.
type MealData struct {
	GramsEaten float64   `json:"grams_eaten"`
	DurationS  float64   `json:"duration_s"`
	StartedAt  time.Time `json:"started_at"`
	PetTag     string    `json:"pet_tag"`
}

// RefillData is the data of bowl.refilled.
type RefillData struct {
	GramsAdded float64 `json:"grams_added"`
	LevelG     float64 `json:"level_g"`
}

// FoodLowData is the data of bowl.food_low.
type FoodLowData struct {
	LevelG     float64 `json:"level_g"`
	ThresholdG float64 `json:"threshold_g"`
}

// EmptyData is the data of bowl.empty.
type EmptyData struct {
	LevelG float64 `json:"level_g"`
}
