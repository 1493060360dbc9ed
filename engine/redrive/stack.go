package redrive

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bowline-iot/bowline/engine/internal/queues"
	"github.com/bowline-iot/bowline/internal/resources"
)

// ForStack builds a Redriver for a stack's events queue, its DLQ and its
// inbox and dead_letters tables. tune, when not nil, adjusts the config
// before it is validated.
func ForStack(ctx context.Context, cfg aws.Config, names resources.Names, tune func(*Config)) (*Redriver, error) {
	q, err := queues.Open(ctx, cfg, names)
	if err != nil {
		return nil, fmt.Errorf("redrive: %w", err)
	}
	c := Config{Queue: q.SQS, QueueURL: q.QueueURL, DLQURL: q.DLQURL, Inbox: q.Inbox, DeadLetters: q.DeadLetters}
	if tune != nil {
		tune(&c)
	}
	return New(c)
}
