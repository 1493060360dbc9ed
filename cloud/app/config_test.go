package app_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero (Registry,
// Logger, Part, Calls) without filling any of them (Open does).
func TestValidateLeavesConfigAlone(t *testing.T) {
	cfg := app.Config{AWS: aws.Config{Region: "us-east-1"}, Names: resources.Names{Stack: "test"}}
	if err := testkit.ValidateKeeps(t, cfg); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
