package guard

import (
	"testing"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero without filling
// any of them (New does, in setDefaults), and refuses a negative setting.
func TestValidateLeavesConfigAlone(t *testing.T) {
	if err := testkit.ValidateKeeps(t, Config{}); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
	if err := testkit.ValidateKeeps(t, Config{Burst: -1}); err == nil {
		t.Error("Validate() of a negative burst = nil; want an error")
	}
}
