package worker

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/internal/queues"
	"github.com/bowline-iot/bowline/internal/resources"
)

// ForStack builds a worker on a stack's resources: events.fifo and its
// DLQ, the inbox and dead_letters tables. tune, when not nil, adjusts the
// config (pollers, lease, logger, observer) before it is validated.
func ForStack(ctx context.Context, cfg aws.Config, names resources.Names, subs []engine.Subscription, tune func(*Config)) (*Worker, error) {
	q, err := queues.Open(ctx, cfg, names)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	c := Config{Queue: q.SQS, QueueURL: q.QueueURL, DLQURL: q.DLQURL, Inbox: q.Inbox, DeadLetters: q.DeadLetters, Subscriptions: subs}
	if tune != nil {
		tune(&c)
	}
	return New(c)
}
