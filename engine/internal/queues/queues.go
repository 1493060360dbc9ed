// Package queues wires the parts the durable consumers share on one stack:
// the DynamoDB and SQS clients, the inbox and dead-letter stores, and the
// URLs of events.fifo and its DLQ. worker.ForStack and redrive.ForStack
// build on it so they cannot disagree about which resources they use.
package queues

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

// Events is a stack's events queue with the stores its consumers write.
type Events struct {
	SQS         *sqs.Client
	QueueURL    string // events.fifo
	DLQURL      string // events-dlq.fifo
	Inbox       *inbox.Store
	DeadLetters *deadletter.Store
}

// Open builds the clients and stores and resolves both queue URLs.
func Open(ctx context.Context, cfg aws.Config, names resources.Names) (Events, error) {
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	e := Events{SQS: sqs.NewFromConfig(cfg)}
	var err error
	if e.Inbox, err = inbox.New(inbox.Config{Client: ddb, Table: names.InboxTable()}); err != nil {
		return Events{}, err
	}
	if e.DeadLetters, err = deadletter.New(ddb, names.DeadLettersTable(), nil); err != nil {
		return Events{}, err
	}
	for _, q := range []struct {
		name string
		url  *string
	}{{names.EventsQueue(), &e.QueueURL}, {names.EventsDLQ(), &e.DLQURL}} {
		out, err := e.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.name)})
		if err != nil {
			return Events{}, fmt.Errorf("queue %s: %w", q.name, err)
		}
		*q.url = aws.ToString(out.QueueUrl)
	}
	return e, nil
}
