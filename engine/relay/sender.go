package relay

import (
	"context"
	"encoding/json"
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

const (
	// maxBatch is SQS's limit of entries per SendMessageBatch.
	maxBatch = 10
	// MaxMessageBytes is SQS's limit on one message body and on the
	// bodies of one SendMessageBatch together: 262,144 bytes (SendMessage
	// and SendMessageBatch API reference; the stack's queues keep this
	// MaximumMessageSize).
	MaxMessageBytes = 256 << 10
)

// outgoing is a message on its way, with the sends SQS refused so far.
type outgoing struct {
	Message
	refused int
	done    bool // accepted by SQS, or a dead letter
}

// send delivers msgs, which are in stream order, and returns once SQS
// accepted each or it became a dead letter, or ctx ended.
//
// Order: a FIFO batch holds at most one message per group. SQS reports
// each entry of a batch on its own, so a later entry of a group could be
// accepted while an earlier one fails, and resending the earlier one would
// put it behind; with one entry per group, a failed message is resent
// before any later message of its group is sent at all.
//
// Size: a batch's bodies stay within MaxMessageBytes together; a body that
// alone exceeds it can never be sent and becomes a dead letter at once.
//
// Failures: an entry SQS refuses is resent up to Failure.MaxRetryAttempts
// times, then dead-lettered (see deadLetter); a call SQS did not answer
// (network, throttling, server error) is retried without limit, since it
// says nothing about the records.
func (r *Relay) send(ctx context.Context, msgs []Message) error {
	var b backlog
	if err := r.admit(ctx, &b, msgs); err != nil {
		return err
	}
	for len(b.pending) > 0 {
		if err := r.sendNext(ctx, &b); err != nil {
			return err
		}
	}
	return nil
}

// nextBatch picks, in order, up to ten pending messages, at most one per
// FIFO group and at most MaxMessageBytes of bodies together.
func nextBatch(pending []*outgoing) []*outgoing {
	var batch []*outgoing
	groups := map[string]bool{}
	size := 0
	for _, o := range pending {
		if len(batch) == maxBatch {
			break
		}
		if o.GroupID != "" {
			if groups[o.GroupID] {
				continue
			}
			// Taken or skipped, no later message of the group may go.
			groups[o.GroupID] = true
		}
		if size+len(o.Body) > MaxMessageBytes {
			continue
		}
		size += len(o.Body)
		batch = append(batch, o)
	}
	return batch
}

func remove(pending []*outgoing, done map[*outgoing]bool) []*outgoing {
	out := pending[:0]
	for _, o := range pending {
		if !done[o] {
			out = append(out, o)
		}
	}
	return out
}

// sendBatch sends batch once. done holds the messages SQS accepted or that
// became dead letters; failed is true when anything is left to resend.
func (r *Relay) sendBatch(ctx context.Context, batch []*outgoing) (done map[*outgoing]bool, failed bool, err error) {
	entries := make([]sqstypes.SendMessageBatchRequestEntry, len(batch))
	for i, m := range batch {
		entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(m.Body)}
		if m.GroupID != "" {
			entries[i].MessageGroupId = aws.String(m.GroupID)
			entries[i].MessageDeduplicationId = aws.String(m.DedupID)
		}
	}
	out, err := r.cfg.Queue.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(r.cfg.QueueURL), Entries: entries})
	if err != nil {
		if ctx.Err() != nil {
			return nil, true, ctx.Err()
		}
		r.log.Warn("send batch failed; retrying", "messages", len(batch), "err", err)
		r.obs.SendError()
		return nil, true, nil
	}
	r.obs.Forwarded(len(out.Successful))
	done = map[*outgoing]bool{}
	for _, s := range out.Successful {
		if i, err := strconv.Atoi(aws.ToString(s.Id)); err == nil && i >= 0 && i < len(batch) {
			done[batch[i]] = true
		}
	}
	for _, f := range out.Failed {
		i, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil || i < 0 || i >= len(batch) {
			continue
		}
		m := batch[i]
		failed = true
		m.refused++
		if f.SenderFault {
			r.obs.Rejected()
		} else {
			r.obs.SendError()
		}
		if m.refused <= Failure.MaxRetryAttempts {
			r.log.Warn("sqs refused message; resending it before any later message of its group", "seq", m.Sequence,
				"group_id", m.GroupID, "dedup_id", m.DedupID, "refused", m.refused, "code", aws.ToString(f.Code), "message", aws.ToString(f.Message))
			continue
		}
		reason := aws.ToString(f.Code) + ": " + aws.ToString(f.Message)
		if err := r.deadLetter(ctx, m.Message, ConditionRetryAttemptsExhausted, reason, m.refused); err != nil {
			return nil, true, err
		}
		done[m] = true
	}
	return done, failed, nil
}

// DeadLetter is the body of a message on the pipe's dead-letter queue: the
// record's place in the stream (the shape of an EventBridge Pipe's
// dead-letter message for a DynamoDB stream source, DDBStreamBatchInfo)
// and, for the events pipe, the tenant and event id, so an operator can
// find the event row and redrive it.
type DeadLetter struct {
	Pipe      string    `json:"pipe"`
	Condition string    `json:"condition"`
	Reason    string    `json:"reason"`
	Refused   int       `json:"refused"`
	GroupID   string    `json:"group_id,omitempty"`
	DedupID   string    `json:"dedup_id,omitempty"`
	Timestamp time.Time `json:"timestamp"`
	BatchInfo BatchInfo `json:"DDBStreamBatchInfo"`
}

// BatchInfo locates dead-lettered records in the source stream.
type BatchInfo struct {
	ShardID             string `json:"shardId"`
	StartSequenceNumber string `json:"startSequenceNumber"`
	EndSequenceNumber   string `json:"endSequenceNumber"`
	BatchSize           int    `json:"batchSize"`
	StreamARN           string `json:"streamArn"`
}

// deadLetter puts m's dead letter on the dead-letter queue, retrying until
// SQS takes it or ctx ends, and counts it (the metric the relay's alarm
// watches). Without a dead-letter queue the record is never skipped: the
// relay logs and keeps retrying it, holding its shard behind it, as a Pipe
// without DeadLetterConfig would.
func (r *Relay) deadLetter(ctx context.Context, m Message, condition, reason string, refused int) error {
	dl := DeadLetter{
		Pipe: r.cfg.Pipe.Name, Condition: condition, Reason: reason, Refused: refused,
		GroupID: m.GroupID, DedupID: m.DedupID, Timestamp: time.Now().UTC(),
		BatchInfo: BatchInfo{ShardID: m.Shard, StartSequenceNumber: m.Sequence, EndSequenceNumber: m.Sequence, BatchSize: 1, StreamARN: r.cfg.StreamARN},
	}
	body, err := json.Marshal(dl)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := r.backoff.Wait(ctx, attempt); err != nil {
				return err
			}
		}
		if r.cfg.DeadLetterURL == "" {
			r.log.Error("record cannot be delivered and the relay has no dead-letter queue; holding it", "seq", m.Sequence,
				"group_id", m.GroupID, "dedup_id", m.DedupID, "condition", condition, "reason", reason)
			r.obs.SendError()
			continue
		}
		out, err := r.cfg.Queue.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(r.cfg.DeadLetterURL),
			Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("0"), MessageBody: aws.String(EscapeJSON(string(body)))}}})
		if err == nil && len(out.Successful) == 1 {
			r.obs.DeadLettered()
			r.log.Error("record dead-lettered", "seq", m.Sequence, "group_id", m.GroupID, "dedup_id", m.DedupID,
				"condition", condition, "reason", reason, "queue", r.cfg.DeadLetterURL)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Warn("dead letter not accepted; retrying", "seq", m.Sequence, "err", err)
		r.obs.SendError()
	}
}

// retry spaces out attempts of a failing call: 100 ms·2^attempt, at most
// 6.4 s, no jitter.
var retry = backoff.Policy{Base: 100 * time.Millisecond, Max: 6400 * time.Millisecond}
