package engine_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero without filling
// any of them (New does, in setDefaults).
func TestValidateLeavesConfigAlone(t *testing.T) {
	cfg := engine.Config{Client: dynamodb.New(dynamodb.Options{Region: "us-east-1"}), EventsTable: "events", InboxTable: "inbox", Catalog: testCatalog()}
	if err := testkit.ValidateKeeps(t, cfg); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
