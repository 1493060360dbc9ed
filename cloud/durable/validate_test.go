package durable

import (
	"testing"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero without filling
// any of them (New does, in setDefaults).
func TestValidateLeavesConfigAlone(t *testing.T) {
	cfg := Config{DB: newFakeDB(), Table: "telemetry_state", Devices: &fakeDevices{}, Letters: &fakeLetters{}, Publisher: &fakePublisher{}, Emitter: &fakeEmitter{}}
	if err := testkit.ValidateKeeps(t, cfg); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
