package pricing

import (
	"testing"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Model with every default left zero without filling any
// of them (Run does, in setDefaults).
func TestValidateLeavesModelAlone(t *testing.T) {
	if err := testkit.ValidateKeeps(t, Model{}); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
	if err := testkit.ValidateKeeps(t, Model{Kinesis: "serverless"}); err == nil {
		t.Error("Validate() of an unknown Kinesis mode = nil; want an error")
	}
}
