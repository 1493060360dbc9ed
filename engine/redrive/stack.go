package redrive

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/resources"
)

// ForStack builds a Redriver for a stack's events queue, its DLQ and its
// inbox and dead_letters tables. tune, when not nil, adjusts the config
// before it is validated.
func ForStack(ctx context.Context, cfg aws.Config, names resources.Names, tune func(*Config)) (*Redriver, error) {
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	sq := sqs.NewFromConfig(cfg)
	in, err := inbox.New(inbox.Config{Client: ddb, Table: names.InboxTable()})
	if err != nil {
		return nil, err
	}
	dl, err := deadletter.New(ddb, names.DeadLettersTable(), nil)
	if err != nil {
		return nil, err
	}
	var urls [2]string
	for i, q := range []string{names.EventsQueue(), names.EventsDLQ()} {
		out, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q)})
		if err != nil {
			return nil, fmt.Errorf("redrive: queue %s: %w", q, err)
		}
		urls[i] = aws.ToString(out.QueueUrl)
	}
	c := Config{Queue: sq, QueueURL: urls[0], DLQURL: urls[1], Inbox: in, DeadLetters: dl}
	if tune != nil {
		tune(&c)
	}
	return New(c)
}
