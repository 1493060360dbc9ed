package ingest

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero, Rejections'
// included, without filling any of them (New does, in setDefaults).
func TestValidateLeavesConfigAlone(t *testing.T) {
	cfg := Config{Names: resources.Names{Stack: "test"}, DynamoDB: dynamodb.New(dynamodb.Options{Region: "us-east-1"}), Emitter: noEmitter{}}
	if err := testkit.ValidateKeeps(t, cfg); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
