package relay

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/internal/backoff"
)

// QueueAPI is the part of the SQS client the relay uses.
type QueueAPI interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ QueueAPI = (*sqs.Client)(nil)

// maxBatch is SQS's limit of entries per SendMessageBatch.
const maxBatch = 10

// send delivers msgs in batches of up to ten, retrying failed entries until
// SQS accepts them or ctx ends. An entry SQS rejects as the sender's fault
// (it can never succeed) is logged and counted, not retried forever.
func (r *Relay) send(ctx context.Context, msgs []Message) error {
	for len(msgs) > 0 {
		n := min(len(msgs), maxBatch)
		if err := r.sendBatch(ctx, msgs[:n]); err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

func (r *Relay) sendBatch(ctx context.Context, batch []Message) error {
	pending := batch
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt > 0 {
			if err := retry.Wait(ctx, attempt); err != nil {
				return err
			}
		}
		entries := make([]sqstypes.SendMessageBatchRequestEntry, len(pending))
		for i, m := range pending {
			entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(m.Body)}
			if m.GroupID != "" {
				entries[i].MessageGroupId = aws.String(m.GroupID)
				entries[i].MessageDeduplicationId = aws.String(m.DedupID)
			}
		}
		out, err := r.cfg.Queue.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(r.cfg.QueueURL), Entries: entries})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.log.Warn("send batch failed; retrying", "pipe", r.pipe.spec.Name, "messages", len(pending), "err", err)
			r.obs.SendError()
			continue
		}
		r.obs.Forwarded(len(out.Successful))
		var retry []Message
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			if i < 0 || i >= len(pending) {
				continue
			}
			if f.SenderFault {
				r.log.Error("sqs rejected message; not retrying", "pipe", r.pipe.spec.Name, "seq", pending[i].Sequence,
					"dedup_id", pending[i].DedupID, "code", aws.ToString(f.Code), "message", aws.ToString(f.Message))
				r.obs.Rejected()
				continue
			}
			r.obs.SendError()
			retry = append(retry, pending[i])
		}
		if len(retry) > 0 {
			r.log.Warn("some messages not accepted; retrying", "pipe", r.pipe.spec.Name, "failed", len(retry))
		}
		pending = retry
	}
	return nil
}

// retry spaces out attempts of a failing call: 100 ms·2^attempt, at most
// 6.4 s, no jitter.
var retry = backoff.Policy{Base: 100 * time.Millisecond, Max: 6400 * time.Millisecond}
