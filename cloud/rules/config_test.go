package rules

import (
	"testing"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero (Rules, ClientID,
// the Producer's) without filling any of them (New does, in setDefaults).
func TestValidateLeavesConfigAlone(t *testing.T) {
	cfg := Config{Broker: "tcp://127.0.0.1:1883", Stack: "test", Kinesis: &memKinesis{}, Stream: "telemetry",
		SQS: &memSQS{}, ErrorQueueURL: "http://q/rule-errors"}
	if err := testkit.ValidateKeeps(t, cfg); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
