package mqttbroker_test

import (
	"testing"

	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero without filling
// any of them (Start does, in setDefaults).
func TestValidateLeavesConfigAlone(t *testing.T) {
	if err := testkit.ValidateKeeps(t, mqttbroker.Config{}); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
