package main

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// giveBackConsumer is the failing-head baseline: engine/worker's failure
// rule before it retried in place (git 8941353^, engine/worker/handle.go),
// reduced to what the scenario exercises. It receives up to ten
// messages, runs each group's messages in order, one goroutine per group,
// without holding up the next receive; on a retryable failure it releases
// the claim, gives the message back with retryDelay of visibility and the
// rest of its group at once (last first), so the group is received again,
// every message of it counting one more receive; a failure on receive
// maxReceive is final (dead letter, row dead, message to the DLQ).
type giveBackConsumer struct {
	q          *enginetest.FIFO
	in         *inbox.Store
	dl         *deadletter.Store
	handler    engine.Handler
	maxReceive int
	retryDelay time.Duration
	worker     string
}

func (c *giveBackConsumer) run(ctx context.Context) error {
	var lanes sync.WaitGroup
	defer lanes.Wait()
	for ctx.Err() == nil {
		out, err := c.q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(c.q.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount, sqstypes.MessageSystemAttributeNameMessageGroupId}})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		groups := map[string][]sqstypes.Message{}
		var order []string
		for _, m := range out.Messages {
			g := m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
			if _, ok := groups[g]; !ok {
				order = append(order, g)
			}
			groups[g] = append(groups[g], m)
		}
		for _, g := range order {
			msgs := groups[g]
			lanes.Go(func() { c.lane(context.WithoutCancel(ctx), msgs) })
		}
	}
	return nil
}

func (c *giveBackConsumer) lane(ctx context.Context, msgs []sqstypes.Message) {
	for i, m := range msgs {
		if c.handle(ctx, m) {
			_, _ = c.q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(c.q.URL), ReceiptHandle: m.ReceiptHandle})
			continue
		}
		_, _ = c.q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(c.q.URL), ReceiptHandle: m.ReceiptHandle,
			VisibilityTimeout: int32(c.retryDelay.Round(time.Second) / time.Second)})
		for j := len(msgs) - 1; j > i; j-- {
			_, _ = c.q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(c.q.URL), ReceiptHandle: msgs[j].ReceiptHandle, VisibilityTimeout: 0})
		}
		return
	}
}

// handle reports whether m is finished (completed or dead).
func (c *giveBackConsumer) handle(ctx context.Context, m sqstypes.Message) bool {
	env, err := engine.DecodeImageJSON([]byte(aws.ToString(m.Body)))
	if err != nil {
		return true
	}
	receives, _ := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
	claim, err := c.in.Claim(ctx, env.ID, fhSubscription, c.worker, 10*time.Second)
	switch {
	case errors.Is(err, inbox.ErrCompleted), errors.Is(err, inbox.ErrDead):
		return true
	case err != nil:
		return false
	}
	herr := c.handler(engine.ContextFor(ctx, env), env)
	if herr == nil {
		return c.in.Complete(ctx, claim) == nil
	}
	if receives < c.maxReceive {
		_ = c.in.Release(ctx, claim, herr)
		return false
	}
	_ = c.dl.Record(ctx, deadletter.Letter{Tenant: env.Tenant, EventID: env.ID, EventType: env.Type, Subscription: fhSubscription,
		Error: herr.Error(), Attempts: claim.Attempts, ReceiveCount: receives, MessageID: aws.ToString(m.MessageId)})
	_ = c.in.MarkDead(ctx, claim, herr)
	_, _ = c.q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(c.q.DLQURL), MessageBody: m.Body,
		MessageGroupId: aws.String(env.Tenant), MessageDeduplicationId: m.MessageId})
	return true
}
