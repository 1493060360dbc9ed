package sim

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Kinds of ground-truth events.
const (
	KindMeal    = "meal"     // a pet ate: PetTag, Grams eaten, Start..End
	KindRefill  = "refill"   // food was added: Grams added, Start..End
	KindFoodLow = "food_low" // food fell below ThresholdG at Start
	KindEmpty   = "empty"    // food fell below ThresholdG (the empty threshold) at Start
	KindFault   = "fault"    // a fault frame was raised at Start: Code, Detail
	KindGlitch  = "glitch"   // a spike of Grams (signed) in the weight signal, not a real change
)

// Truth is one line of the ground truth (JSON lines, one object per
// event, in time order per device). A detector is scored by matching its
// events to these. Times are the simulated wall clock (Config.Start plus
// uptime); the *_uptime_ms fields are the same instants on the device's
// uptime clock, which is what frames carry: match on those when the
// simulation runs faster than real time, because the bridge maps uptime
// to the gateway's real clock.
type Truth struct {
	Kind          string    `json:"kind"`
	Device        string    `json:"device"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end,omitzero"`
	StartUptimeMS int64     `json:"start_uptime_ms"`
	EndUptimeMS   int64     `json:"end_uptime_ms,omitzero"`
	// PetTag is the RFID tag of the pet that ate (meal).
	PetTag string `json:"pet_tag,omitempty"`
	// Grams: eaten (meal), added (refill), spike height (glitch).
	Grams float64 `json:"grams,omitzero"`
	// LevelG is the true food in the bowl at End (or at Start for point
	// events), in grams.
	LevelG float64 `json:"level_g"`
	// ThresholdG is the threshold crossed (food_low, empty).
	ThresholdG float64 `json:"threshold_g,omitzero"`
	// Code and Detail of a fault.
	Code   uint16 `json:"code,omitzero"`
	Detail string `json:"detail,omitempty"`
}

// TruthWriter returns an OnTruth that writes JSON lines to w, serialised.
// Write errors are kept and returned by the second result.
func TruthWriter(w io.Writer) (onTruth func(Truth), err func() error) {
	var mu sync.Mutex
	var first error
	enc := json.NewEncoder(w)
	return func(t Truth) {
			mu.Lock()
			defer mu.Unlock()
			if e := enc.Encode(t); e != nil && first == nil {
				first = e
			}
		}, func() error {
			mu.Lock()
			defer mu.Unlock()
			return first
		}
}

func round1(g float64) float64 {
	if g < 0 {
		return -round1(-g)
	}
	return float64(int64(g*10+0.5)) / 10
}
