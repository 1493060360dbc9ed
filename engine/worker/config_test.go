package worker

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Validate checks a Config with every default left zero without filling
// any of them (New does, in setDefaults).
func TestValidateLeavesConfigAlone(t *testing.T) {
	ddb := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	in, err := inbox.New(inbox.Config{Client: ddb, Table: "inbox"})
	if err != nil {
		t.Fatal(err)
	}
	dl, err := deadletter.New(ddb, "inbox", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Queue: sqs.New(sqs.Options{Region: "us-east-1"}), QueueURL: "http://q/events.fifo", DLQURL: "http://q/dlq.fifo",
		Inbox: in, DeadLetters: dl}
	if err := testkit.ValidateKeeps(t, cfg); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
