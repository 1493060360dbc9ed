package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
)

// eventQueuesWith creates a stack's events queue and DLQ, the queue with
// a redrive policy of maxReceive (none when 0), and returns the stack's
// names.
func eventQueuesWith(t *testing.T, maxReceive int) resources.Names {
	t.Helper()
	names, err := resources.New("mrc-" + strings.ToLower(ulid.Make().String()[16:]))
	if err != nil {
		t.Fatal(err)
	}
	c := sqs.NewFromConfig(lstest.AWSConfig(t))
	ctx := t.Context()
	dlq, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(names.EventsDLQ()), Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	attrs := map[string]string{"FifoQueue": "true", "VisibilityTimeout": "60"}
	if maxReceive > 0 {
		arn, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := json.Marshal(map[string]any{"deadLetterTargetArn": arn.Attributes["QueueArn"], "maxReceiveCount": maxReceive})
		attrs["RedrivePolicy"] = string(p)
	}
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(names.EventsQueue()), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
		_, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: dlq.QueueUrl})
	})
	return names
}

// The worker's MaxReceiveCount is the events queue's own (its
// RedrivePolicy), not a constant; a queue without a redrive policy falls
// back to resources.EventsMaxReceiveCount.
func TestWorkerTakesMaxReceiveCountFromTheQueue(t *testing.T) {
	bound, err := bindForTest(t, nil) // bind_test.go: Bind refuses a nil set
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy, want int
	}{
		{3, 3},
		{9, 9},
		{0, resources.EventsMaxReceiveCount},
	} {
		a, err := app.Open(app.Config{AWS: lstest.AWSConfig(t), Names: eventQueuesWith(t, tc.policy)})
		if err != nil {
			t.Fatal(err)
		}
		var got int
		if _, err := a.Worker(t.Context(), bound, func(c *worker.Config) { got = c.MaxReceiveCount }); err != nil {
			t.Fatalf("Worker: %v", err)
		}
		if got != tc.want {
			t.Errorf("queue with maxReceiveCount %d: worker MaxReceiveCount = %d; want %d", tc.policy, got, tc.want)
		}
		a.Close()
	}
}
