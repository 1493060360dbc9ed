package app

import (
	"context"
	"fmt"
	"time"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/inbox/seedinbox"
)

// SeedWorker builds the seed article's durable consumer
// (engine/inbox/seedinbox) on events.fifo, the inbox table and
// dead_letters: the baseline of `bowline worker --inbox seed` and
// ./scripts/chaos (docs/chaos.md), never the real worker. wait is the
// long-poll wait.
func (a *App) SeedWorker(ctx context.Context, bound engine.Catalog, wait time.Duration) (*seedinbox.Consumer, error) {
	a = a.Part(PartWorker)
	queue, _, err := a.eventQueues(ctx)
	if err != nil {
		return nil, fmt.Errorf("seed worker: %w", err)
	}
	store, err := seedinbox.NewStore(a.DynamoDB, a.Names.InboxTable(), nil)
	if err != nil {
		return nil, err
	}
	return seedinbox.New(seedinbox.Config{
		Queue: a.SQS, QueueURL: queue, Store: store, DeadLetters: a.DeadLetters,
		Subscriptions: bound.Subscriptions, WaitTime: wait, Logger: a.Logger,
	})
}
