package telemetry_test

import (
	"testing"

	"github.com/bowline-iot/bowline/cloud/telemetry"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a ProducerConfig with every default left zero without
// filling any of them (NewProducer does, in setDefaults).
func TestValidateLeavesConfigAlone(t *testing.T) {
	if err := testkit.ValidateKeeps(t, telemetry.ProducerConfig{Stream: "telemetry"}); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
