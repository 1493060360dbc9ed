package recordchange

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero without filling
// any of them (New does, in setDefaults).
func TestValidateLeavesConfigAlone(t *testing.T) {
	cfg := Config{Queue: sqs.New(sqs.Options{Region: "us-east-1"}), QueueURL: "http://q/record-changes"}
	if err := testkit.ValidateKeeps(t, cfg); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
