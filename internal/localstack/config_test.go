package localstack_test

import (
	"testing"

	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero (Services, Root,
// StartTimeout) without filling any of them (Start does, in setDefaults).
func TestValidateLeavesConfigAlone(t *testing.T) {
	if err := testkit.ValidateKeeps(t, localstack.Config{}); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
