package rules

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/edge/wire"
)

// ErrNotReplayable marks an error queue message Replay cannot put back: not
// an ErrorMessage, a rule this stack does not run, or a payload that does
// not decode. The message stays in the queue.
var ErrNotReplayable = errors.New("rule error message cannot be replayed")

// Recover turns an ErrorMessage of one of specs (rule names in stack) back
// into what the rule's action would have written: the rule, the record
// (evaluated at now, the replay's time: AWS's message does not keep when
// the rules engine received the original) and the partition key. The
// topic may carry the Basic Ingest prefix or not (the stand-in writes it as
// published; docs/telemetry-path.md).
func Recover(m ErrorMessage, specs []Spec, stack string, now time.Time) (Spec, []byte, string, error) {
	var spec Spec
	found := false
	for _, s := range specs {
		if s.Name(stack) == m.RuleName {
			spec, found = s, true
		}
	}
	if !found {
		return Spec{}, nil, "", fmt.Errorf("rule %q is not a rule of stack %s: %w", m.RuleName, stack, ErrNotReplayable)
	}
	topic := m.Topic
	if rule, inner, ok := wire.SplitBasicIngest(topic); ok {
		if rule != m.RuleName {
			return Spec{}, nil, "", fmt.Errorf("topic %q is another rule's than %s: %w", topic, m.RuleName, ErrNotReplayable)
		}
		topic = inner
	}
	payload, err := base64.StdEncoding.DecodeString(m.Base64OriginalPayload)
	if err != nil {
		return Spec{}, nil, "", fmt.Errorf("rule %s topic %q: payload: %v: %w", m.RuleName, m.Topic, err, ErrNotReplayable)
	}
	rec, key, err := spec.Evaluate(topic, payload, now)
	if err != nil {
		return Spec{}, nil, "", fmt.Errorf("%w: %w", err, ErrNotReplayable)
	}
	return spec, rec, key, nil
}

// ReplayQueue is the part of SQS a replay uses; *sqs.Client is one.
type ReplayQueue interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// ReplayStream is the part of Kinesis a replay uses; *kinesis.Client is one.
type ReplayStream interface {
	PutRecord(ctx context.Context, in *kinesis.PutRecordInput, opts ...func(*kinesis.Options)) (*kinesis.PutRecordOutput, error)
}

// Replayer puts the messages of the rules' error queue back into their
// rules' streams: what the action would have done had it not failed. Each
// message is deleted from the queue only once its record is in the
// stream; a message it cannot replay stays, visible again at once
// (ErrNotReplayable, reported). A dry run leaves every message so.
// Readers of the streams drop what a replay puts twice (events by (thing,
// id), telemetry by (thing, outbox, seq)), so replaying is idempotent.
type Replayer struct {
	Queue    ReplayQueue
	QueueURL string
	Kinesis  ReplayStream
	// Stack and Rules name the rules (default All()); Stream gives each
	// rule's stream (Spec.Stream of the stack's names).
	Stack  string
	Rules  []Spec
	Stream func(Spec) string
	// Now is the replay's clock (the records' received_at); default
	// time.Now.
	Now func() time.Time
	// DryRun decodes and reports without putting or deleting.
	DryRun bool
}

// Replayed is what one Replay did.
type Replayed struct {
	// Put counts the records put back, by rule base name.
	Put map[string]int `json:"put"`
	// Skipped holds a reason per message left in the queue.
	Skipped []string `json:"skipped,omitempty"`
}

// Replay receives the queue's messages until a receive comes back empty, a
// message comes back that this run has seen (one it left in the queue,
// visible again), or max messages were seen (0: no limit), replaying each.
func (r *Replayer) Replay(ctx context.Context, max int) (Replayed, error) {
	res := Replayed{Put: map[string]int{}}
	specs, now := r.Rules, r.Now
	if specs == nil {
		specs = All()
	}
	if now == nil {
		now = time.Now
	}
	seen, ids := 0, map[string]bool{}
	for max == 0 || seen < max {
		n := int32(10)
		if max > 0 && max-seen < 10 {
			n = int32(max - seen)
		}
		out, err := r.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(r.QueueURL), MaxNumberOfMessages: n, WaitTimeSeconds: 1})
		if err != nil {
			return res, fmt.Errorf("receive from %s: %w", r.QueueURL, err)
		}
		if len(out.Messages) == 0 {
			return res, nil
		}
		for i, msg := range out.Messages {
			if ids[aws.ToString(msg.MessageId)] {
				// Every message left has been seen: leave this one and the
				// rest of the batch as they were.
				for _, m := range out.Messages[i:] {
					if err := r.release(ctx, m.ReceiptHandle); err != nil {
						return res, err
					}
				}
				return res, nil
			}
			ids[aws.ToString(msg.MessageId)] = true
			seen++
			var m ErrorMessage
			spec, rec, key, err := Spec{}, []byte(nil), "", json.Unmarshal([]byte(aws.ToString(msg.Body)), &m)
			if err != nil {
				err = fmt.Errorf("not an error action message: %v: %w", err, ErrNotReplayable)
			} else {
				spec, rec, key, err = Recover(m, specs, r.Stack, now())
			}
			if err != nil || r.DryRun {
				if err != nil {
					res.Skipped = append(res.Skipped, fmt.Sprintf("message %s: %v", aws.ToString(msg.MessageId), err))
				} else {
					res.Put[spec.Base]++
				}
				if err := r.release(ctx, msg.ReceiptHandle); err != nil {
					return res, err
				}
				continue
			}
			if _, err := r.Kinesis.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(r.Stream(spec)), PartitionKey: aws.String(key), Data: rec}); err != nil {
				return res, fmt.Errorf("put message %s back into %s: %w", aws.ToString(msg.MessageId), r.Stream(spec), err)
			}
			if _, err := r.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.QueueURL), ReceiptHandle: msg.ReceiptHandle}); err != nil {
				return res, fmt.Errorf("delete replayed message %s (its record is in %s; a second replay puts it again, which readers drop): %w", aws.ToString(msg.MessageId), r.Stream(spec), err)
			}
			res.Put[spec.Base]++
		}
	}
	return res, nil
}

// release makes a received message visible again at once.
func (r *Replayer) release(ctx context.Context, receipt *string) error {
	if _, err := r.Queue.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(r.QueueURL), ReceiptHandle: receipt, VisibilityTimeout: 0}); err != nil {
		return fmt.Errorf("leave a message in %s: %w", r.QueueURL, err)
	}
	return nil
}
