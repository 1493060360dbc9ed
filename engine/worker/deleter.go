package worker

import (
	"context"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/internal/backoff"
)

// deleteRound is the most messages one round of the deleter takes: that
// many DeleteMessageBatch calls of ten run at once.
const deleteRound = 4 * maxBatch

// deleteAttempts bounds the tries of one DeleteMessageBatch call that
// fails whole (throttling, a connection error). A message whose delete is
// given up is redelivered later and deleted then: its work is recorded in
// the inbox.
const deleteAttempts = 4

// runDeleter deletes finished messages in batches until in is closed and
// drained. It never waits to fill a batch: what arrives while a round is
// in flight forms the next one (the group commit of deletes), so a lone
// message is deleted at once and a busy worker needs a tenth of the calls.
// A message stays in the pool, its visibility kept, until its delete is
// answered.
func (w *Worker) runDeleter(in <-chan *message) {
	for m := range in {
		batch := []*message{m}
	fill:
		for len(batch) < deleteRound {
			select {
			case m, ok := <-in:
				if !ok {
					break fill
				}
				batch = append(batch, m)
			default:
				break fill
			}
		}
		var wg sync.WaitGroup
		for i := 0; i < len(batch); i += maxBatch {
			chunk := batch[i:min(i+maxBatch, len(batch))]
			wg.Go(func() { w.deleteBatch(chunk) })
		}
		wg.Wait()
	}
}

func (w *Worker) deleteBatch(msgs []*message) {
	defer func() {
		for _, m := range msgs {
			w.pool.done(m)
		}
	}()
	in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(w.cfg.QueueURL)}
	var held []*message
	for _, m := range msgs {
		receipt, _, ok := w.pool.snapshot(m)
		if !ok {
			continue
		}
		in.Entries = append(in.Entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(len(held))), ReceiptHandle: aws.String(receipt)})
		held = append(held, m)
	}
	if len(held) == 0 {
		return
	}
	policy := backoff.Policy{Base: w.cfg.InfraBackoffBase, Max: w.cfg.InfraBackoffMax, Jitter: 0.5}
	var out *sqs.DeleteMessageBatchOutput
	var err error
	for attempt := 0; attempt < deleteAttempts; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), sqsCallTimeout)
		out, err = w.cfg.Queue.DeleteMessageBatch(ctx, in)
		cancel()
		if err == nil {
			break
		}
		w.obs.InfraRetry("DeleteMessageBatch")
		_ = backoff.Sleep(context.Background(), policy.Delay(attempt))
	}
	if err != nil {
		w.log.Warn("delete failed; the messages will be redelivered and skipped", "messages", len(held), "err", err)
		return
	}
	failed := map[int]bool{}
	for _, f := range out.Failed {
		j, _ := strconv.Atoi(aws.ToString(f.Id))
		failed[j] = true
		if j >= 0 && j < len(held) {
			w.log.Warn("delete failed; the message will be redelivered and skipped", "message_id", held[j].id, "group", held[j].group, "err", batchEntryError(f))
		}
	}
	for j := range held {
		if !failed[j] {
			w.obs.Deleted()
		}
	}
}
