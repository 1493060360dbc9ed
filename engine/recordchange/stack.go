package recordchange

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/resources"
)

// ForStack builds a consumer of a stack's record-changes queue. tune, when
// not nil, adjusts the config before it is validated.
func ForStack(ctx context.Context, cfg aws.Config, names resources.Names, subs []engine.Subscription, tune func(*Config)) (*Consumer, error) {
	sq := sqs.NewFromConfig(cfg)
	out, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(names.RecordChangesQueue())})
	if err != nil {
		return nil, fmt.Errorf("record-change consumer: queue %s: %w", names.RecordChangesQueue(), err)
	}
	c := Config{Queue: sq, QueueURL: aws.ToString(out.QueueUrl), Subscriptions: subs}
	if tune != nil {
		tune(&c)
	}
	return New(c)
}
