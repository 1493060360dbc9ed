package dev_test

import (
	"testing"

	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero (Names, tenants,
// secrets, clocks) without filling any of them (Start does).
func TestValidateLeavesConfigAlone(t *testing.T) {
	if err := testkit.ValidateKeeps(t, dev.Config{}); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
