package relay

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero without filling
// any of them (New does, in setDefaults).
func TestValidateLeavesConfigAlone(t *testing.T) {
	cfg := Config{Pipe: EventsPipe, Streams: dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1"}), StreamARN: "arn:aws:dynamodb:us-east-1:000000000000:table/events/stream/x",
		Queue: sqs.New(sqs.Options{Region: "us-east-1"}), QueueURL: "http://q/events.fifo",
		Checkpoints: dynamodb.New(dynamodb.Options{Region: "us-east-1"}), CheckpointTable: "inbox"}
	if err := testkit.ValidateKeeps(t, cfg); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
