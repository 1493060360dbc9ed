package iotdata_test

import (
	"testing"

	"github.com/bowline-iot/bowline/cloud/iotdata"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks an MQTTConfig with every default left zero without
// filling any of them (DialMQTT does, in setDefaults).
func TestMQTTConfigValidateLeavesItAlone(t *testing.T) {
	if err := testkit.ValidateKeeps(t, iotdata.MQTTConfig{URL: "tcp://127.0.0.1:1883"}); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
	if err := testkit.ValidateKeeps(t, iotdata.MQTTConfig{URL: "tcp://127.0.0.1:1883", PublishTimeout: -1}); err == nil {
		t.Error("Validate() of a negative PublishTimeout = nil; want an error")
	}
}
