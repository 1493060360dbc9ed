package enginetest_test

// The SQS FIFO conformance suite: one table of documented SQS FIFO
// behaviours, each a check that runs against the FIFO double
// (enginetest.FIFO) and against fauxqs through the AWS SDK, so that the
// two are held to the same documentation. A check returns what it
// observed as a short text; the behaviour's want is what the SQS
// documentation says. Where one side is known to differ, differs holds
// what that side does instead, and the test asserts exactly that: when
// fauxqs (or the double) starts to behave as documented the test fails
// and says to drop the entry, here and in docs/local-stack.md ("SQS
// FIFO: fauxqs, the double and the documentation"), which
// TestFIFOConformanceDocumented keeps in step with this table.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// fifoAPI is the part of the SQS API the behaviours call. Both the SDK
// client (talking to fauxqs) and the double implement it.
type fifoAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

var (
	_ fifoAPI = (*sqs.Client)(nil)
	_ fifoAPI = (*enginetest.FIFO)(nil)
)

// The implementations under test.
const (
	double = "double"
	fauxqs = "fauxqs"
)

// queueConfig is what a behaviour needs of its queue.
type queueConfig struct {
	// maxReceive is the RedrivePolicy's maxReceiveCount; 0: no policy.
	maxReceive int
}

// visibility is every test queue's VisibilityTimeout: long enough never
// to lapse on a loaded machine unless a behaviour shortens it on purpose
// (a receive's VisibilityTimeout of one second).
const visibility = 30

// maxMessageSize is the test queues' MaximumMessageSize: the stack's
// events queue keeps 262,144 bytes (internal/provision).
const maxMessageSize = 256 << 10

// fifoQueue is a fresh FIFO queue and its dead-letter queue on one
// implementation.
type fifoQueue struct {
	t        *testing.T
	ctx      context.Context
	api      fifoAPI
	url, dlq string
}

func openDouble(t *testing.T, cfg queueConfig) *fifoQueue {
	f := enginetest.NewFIFO(enginetest.FIFOConfig{Visibility: visibility * time.Second, MaxReceiveCount: cfg.maxReceive})
	return &fifoQueue{t: t, ctx: enginetest.Ctx(t), api: f, url: f.URL, dlq: f.DLQURL}
}

// openFauxqs creates the queue pair on the local stack's fauxqs, with the
// events queue's attributes (FIFO, explicit deduplication ids, 256 KiB
// messages), and deletes it when the test ends.
func openFauxqs(t *testing.T, cfg queueConfig) *fifoQueue {
	t.Helper()
	c := sqs.NewFromConfig(lstest.AWSConfig(t))
	ctx := enginetest.Ctx(t)
	name := lstest.Names(t).Stack + "-conf-" + strings.ToLower(ulid.Make().String()[16:])
	create := func(name string, attrs map[string]string) string {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatalf("create queue %s: %v", name, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
		})
		return aws.ToString(out.QueueUrl)
	}
	attrs := func() map[string]string {
		return map[string]string{
			"FifoQueue": "true", "ContentBasedDeduplication": "false",
			"VisibilityTimeout": strconv.Itoa(visibility), "MaximumMessageSize": strconv.Itoa(maxMessageSize),
		}
	}
	dlq := create(name+"-dlq.fifo", attrs())
	main := attrs()
	if cfg.maxReceive > 0 {
		arn, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlq), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatalf("arn of %s: %v", dlq, err)
		}
		policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": arn.Attributes["QueueArn"], "maxReceiveCount": cfg.maxReceive})
		main["RedrivePolicy"] = string(policy)
	}
	return &fifoQueue{t: t, ctx: ctx, api: c, url: create(name+".fifo", main), dlq: dlq}
}

// send sends body to group with dedup as its deduplication id (body when
// dedup is empty) and returns the error code ("ok" on success).
func (q *fifoQueue) send(group, dedup, body string) string {
	q.t.Helper()
	if dedup == "" {
		dedup = body
	}
	_, err := q.api.SendMessage(q.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(body),
		MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(dedup)})
	return codeOf(err)
}

// sendAll sends each body to group, its deduplication id the body; it
// fails the test on an error.
func (q *fifoQueue) sendAll(group string, bodies ...string) {
	q.t.Helper()
	for _, b := range bodies {
		if c := q.send(group, "", b); c != "ok" {
			q.t.Fatalf("send %s to group %s: %s", b, group, c)
		}
	}
}

// receive takes up to max messages off url, with the given visibility
// timeout (0: the queue's), without waiting; it fails the test on an
// error.
func (q *fifoQueue) receive(url string, max, vis int32) []sqstypes.Message {
	q.t.Helper()
	return q.poll(url, max, vis, 0)
}

func (q *fifoQueue) poll(url string, max, vis, wait int32) []sqstypes.Message {
	q.t.Helper()
	out, err := q.api.ReceiveMessage(q.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: max,
		VisibilityTimeout: vis, WaitTimeSeconds: wait,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
	if err != nil {
		q.t.Fatalf("receive from %s: %v", url, err)
	}
	return out.Messages
}

func (q *fifoQueue) del(handle *string) string {
	_, err := q.api.DeleteMessage(q.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: handle})
	return codeOf(err)
}

func (q *fifoQueue) changeVisibility(handle *string, secs int32) string {
	_, err := q.api.ChangeMessageVisibility(q.ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.url), ReceiptHandle: handle, VisibilityTimeout: secs})
	return codeOf(err)
}

// codeOf is err's SQS error code without the query protocol's
// "AWS.SimpleQueueService." prefix, or "ok" for nil.
func codeOf(err error) string {
	if err == nil {
		return "ok"
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return strings.TrimPrefix(api.ErrorCode(), "AWS.SimpleQueueService.")
	}
	return err.Error()
}

// listBodies lists the messages' bodies, "-" for none.
func listBodies(ms []sqstypes.Message) string {
	if len(ms) == 0 {
		return "-"
	}
	var s []string
	for _, m := range ms {
		s = append(s, aws.ToString(m.Body))
	}
	return strings.Join(s, " ")
}

// lapse waits out a one-second visibility timeout given at the receive.
// Waiting longer on a loaded machine changes nothing.
func lapse() { time.Sleep(1500 * time.Millisecond) }

// behaviour is one documented SQS FIFO behaviour.
type behaviour struct {
	name string
	// doc names the SQS documentation it follows.
	doc   string
	queue queueConfig
	// check drives a fresh queue and reports what it observed.
	check func(q *fifoQueue) string
	// want is what the documentation says check observes.
	want string
	// differs maps an implementation known to differ from the
	// documentation to what check observes on it instead.
	differs map[string]string
	// note says why a difference is kept, when it is on purpose.
	note string
}

var behaviours = []behaviour{
	{
		name: "receive returns up to 10 messages of one group",
		doc:  `"FIFO queue delivery logic" (receiving messages: as many messages of one message group ID as possible, up to MaxNumberOfMessages, at most 10)`,
		check: func(q *fifoQueue) string {
			q.sendAll("a", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11", "a12")
			q.sendAll("b", "b1")
			return listBodies(q.receive(q.url, 10, 0))
		},
		want:    "a1 a2 a3 a4 a5 a6 a7 a8 a9 a10",
		differs: map[string]string{fauxqs: "a1 b1"},
	},
	{
		name: "a receive fills its batch from several groups",
		doc:  `"FIFO queue delivery logic" (if fewer than 10 messages of one group are available, messages of other groups fill the batch, each group in order)`,
		check: func(q *fifoQueue) string {
			q.sendAll("a", "a1")
			q.sendAll("b", "b1")
			q.sendAll("c", "c1")
			return listBodies(q.receive(q.url, 10, 0))
		},
		want: "a1 b1 c1",
	},
	{
		name: "a group is locked while a message of it is in flight",
		doc:  `"FIFO queue delivery logic" (no more messages of a group until the received ones are deleted or visible again); "Amazon SQS FIFO queue: message group ID"`,
		check: func(q *fifoQueue) string {
			q.sendAll("a", "a1", "a2")
			q.sendAll("b", "b1")
			first := q.receive(q.url, 1, 0)
			locked := q.receive(q.url, 10, 0)
			if len(first) != 1 {
				return "first receive: " + listBodies(first)
			}
			deleted := q.del(first[0].ReceiptHandle)
			return fmt.Sprintf("first: %s; while in flight: %s; delete: %s; then: %s", listBodies(first), listBodies(locked), deleted, listBodies(q.receive(q.url, 10, 0)))
		},
		want: "first: a1; while in flight: b1; delete: ok; then: a2",
	},
	{
		name: "messages ahead of an in-flight one in their group can be received again",
		doc: `"FIFO queue delivery logic" (no more messages of a group until the received ones are deleted or visible again): ` +
			`a received message given back ahead of one still in flight is receivable, those behind it are not`,
		check: func(q *fifoQueue) string {
			q.sendAll("a", "a1", "a2", "a3")
			first := q.receive(q.url, 10, 0)
			if len(first) == 0 {
				return "first: -"
			}
			// Give back the head and the tail; a2, if received, stays in flight.
			q.changeVisibility(first[0].ReceiptHandle, 0)
			if len(first) > 1 {
				q.changeVisibility(first[len(first)-1].ReceiptHandle, 0)
			}
			return fmt.Sprintf("first: %s; after giving back the head and the tail: %s", listBodies(first), listBodies(q.receive(q.url, 10, 0)))
		},
		want:    "first: a1 a2 a3; after giving back the head and the tail: a1",
		differs: map[string]string{fauxqs: "first: a1; after giving back the head and the tail: a1"},
	},
	{
		name: "ChangeMessageVisibility 0 puts a message back at the head of its group",
		doc:  `ChangeMessageVisibility API reference (VisibilityTimeout minimum 0); "ApproximateReceiveCount" (ReceiveMessage API reference)`,
		check: func(q *fifoQueue) string {
			q.sendAll("a", "a1", "a2")
			first := q.receive(q.url, 1, 0)
			if len(first) != 1 {
				return "first receive: " + listBodies(first)
			}
			release := q.changeVisibility(first[0].ReceiptHandle, 0)
			again := q.receive(q.url, 1, 0)
			if len(again) != 1 {
				return "release: " + release + "; then: " + listBodies(again)
			}
			return fmt.Sprintf("release: %s; then: %s, ApproximateReceiveCount %s, same MessageId %t", release, listBodies(again),
				again[0].Attributes["ApproximateReceiveCount"], aws.ToString(again[0].MessageId) == aws.ToString(first[0].MessageId))
		},
		want: "release: ok; then: a1, ApproximateReceiveCount 2, same MessageId true",
	},
	{
		name: "a lapsed visibility timeout redelivers with a new handle",
		doc:  `"Amazon SQS visibility timeout" (the message becomes visible again when the timeout ends without a delete); "ApproximateReceiveCount"`,
		check: func(q *fifoQueue) string {
			q.sendAll("a", "a1")
			first := q.receive(q.url, 1, 1)
			if len(first) != 1 {
				return "first receive: " + listBodies(first)
			}
			var again []sqstypes.Message
			for deadline := time.Now().Add(30 * time.Second); len(again) == 0 && time.Now().Before(deadline); {
				again = q.poll(q.url, 1, 0, 2)
			}
			if len(again) != 1 {
				return "redelivered: " + listBodies(again)
			}
			return fmt.Sprintf("redelivered: %s, ApproximateReceiveCount %s, new handle %t", listBodies(again),
				again[0].Attributes["ApproximateReceiveCount"], aws.ToString(again[0].ReceiptHandle) != aws.ToString(first[0].ReceiptHandle))
		},
		want: "redelivered: a1, ApproximateReceiveCount 2, new handle true",
	},
	{
		name: "an expired receipt handle is refused",
		doc:  `DeleteMessage with an expired receipt handle: FIFO queues answer InvalidParameterValue "The receipt handle has expired" (AWS Knowledge Center, ReceiptHandleIsInvalid or InvalidParameterValue errors when deleting SQS messages); the message stays queued`,
		check: func(q *fifoQueue) string {
			q.sendAll("a", "a1")
			first := q.receive(q.url, 1, 1)
			if len(first) != 1 {
				return "first receive: " + listBodies(first)
			}
			lapse()
			extend := q.changeVisibility(first[0].ReceiptHandle, 10)
			del := q.del(first[0].ReceiptHandle)
			return fmt.Sprintf("ChangeMessageVisibility: %s; DeleteMessage: %s; then: %s", extend, del, listBodies(q.poll(q.url, 1, 0, 1)))
		},
		want:    "ChangeMessageVisibility: InvalidParameterValue; DeleteMessage: InvalidParameterValue; then: a1",
		differs: map[string]string{fauxqs: "ChangeMessageVisibility: ok; DeleteMessage: ok; then: -"},
	},
	{
		name: "a superseded receipt handle is refused",
		doc:  `DeleteMessage API reference ("you must provide the most recently received ReceiptHandle"); on FIFO queues an older handle has expired (InvalidParameterValue)`,
		check: func(q *fifoQueue) string {
			q.sendAll("a", "a1")
			first := q.receive(q.url, 1, 0)
			if len(first) != 1 {
				return "first receive: " + listBodies(first)
			}
			q.changeVisibility(first[0].ReceiptHandle, 0)
			again := q.receive(q.url, 1, 0)
			if len(again) != 1 {
				return "again: " + listBodies(again)
			}
			old := q.del(first[0].ReceiptHandle)
			release := q.changeVisibility(again[0].ReceiptHandle, 0)
			return fmt.Sprintf("again: %s; DeleteMessage(old handle): %s; release(new handle): %s; then: %s", listBodies(again), old, release, listBodies(q.receive(q.url, 1, 0)))
		},
		want:    "again: a1; DeleteMessage(old handle): InvalidParameterValue; release(new handle): ok; then: a1",
		differs: map[string]string{fauxqs: "again: a1; DeleteMessage(old handle): ok; release(new handle): ok; then: a1"},
	},
	{
		name: "a receipt handle that was never issued is refused",
		doc:  `DeleteMessage and ChangeMessageVisibility API reference (ReceiptHandleIsInvalid: the specified receipt handle isn't valid)`,
		check: func(q *fifoQueue) string {
			bogus := aws.String("not-a-receipt-handle")
			return fmt.Sprintf("DeleteMessage: %s; ChangeMessageVisibility: %s", q.del(bogus), q.changeVisibility(bogus, 10))
		},
		want:    "DeleteMessage: ReceiptHandleIsInvalid; ChangeMessageVisibility: ReceiptHandleIsInvalid",
		differs: map[string]string{fauxqs: "DeleteMessage: ok; ChangeMessageVisibility: MessageNotInflight"},
	},
	{
		name: "ChangeMessageVisibility on a deleted receipt handle",
		doc: `ChangeMessageVisibility on a deleted receipt handle: InvalidParameterValue "Message does not exist or is not available for visibility timeout change", ` +
			`as SQS answers (the API reference lists only MessageNotInflight and ReceiptHandleIsInvalid); repeating the delete succeeds`,
		check: func(q *fifoQueue) string {
			q.sendAll("a", "a1")
			first := q.receive(q.url, 1, 0)
			if len(first) != 1 {
				return "first receive: " + listBodies(first)
			}
			del := q.del(first[0].ReceiptHandle)
			return fmt.Sprintf("DeleteMessage: %s; ChangeMessageVisibility: %s; DeleteMessage again: %s", del,
				q.changeVisibility(first[0].ReceiptHandle, 10), q.del(first[0].ReceiptHandle))
		},
		want:    "DeleteMessage: ok; ChangeMessageVisibility: InvalidParameterValue; DeleteMessage again: ok",
		differs: map[string]string{fauxqs: "DeleteMessage: ok; ChangeMessageVisibility: MessageNotInflight; DeleteMessage again: ok"},
	},
	{
		name: "visibility timeout maximum 12 hours from the receive",
		doc:  `ChangeMessageVisibility API reference and "Amazon SQS visibility timeout" (visibility timeout maximum 12 hours, counted from the receive; a longer total is rejected)`,
		check: func(q *fifoQueue) string {
			q.sendAll("a", "a1")
			first := q.receive(q.url, 1, 0)
			if len(first) != 1 {
				return "first receive: " + listBodies(first)
			}
			over := q.changeVisibility(first[0].ReceiptHandle, 43201)
			time.Sleep(1500 * time.Millisecond)
			full := q.changeVisibility(first[0].ReceiptHandle, 43200)
			return fmt.Sprintf("43201 s: %s; 43200 s, 1.5 s after the receive: %s", over, full)
		},
		want:    "43201 s: InvalidParameterValue; 43200 s, 1.5 s after the receive: InvalidParameterValue",
		differs: map[string]string{fauxqs: "43201 s: InvalidParameterValue; 43200 s, 1.5 s after the receive: ok"},
	},
	{
		name:  "maxReceiveCount redrive moves a message to the dead-letter queue",
		doc:   `"Using dead-letter queues in Amazon SQS" (RedrivePolicy maxReceiveCount: past it the message moves to the dead-letter queue, keeping its MessageId and group)`,
		queue: queueConfig{maxReceive: 2},
		check: func(q *fifoQueue) string {
			q.sendAll("a", "a1", "a2")
			var id string
			for range 2 {
				ms := q.receive(q.url, 1, 0)
				if len(ms) != 1 {
					return "receive: " + listBodies(ms)
				}
				id = aws.ToString(ms[0].MessageId)
				q.changeVisibility(ms[0].ReceiptHandle, 0)
			}
			main := q.receive(q.url, 10, 0)
			dead := q.receive(q.dlq, 10, 0)
			if len(dead) != 1 {
				return fmt.Sprintf("main: %s; dead-letter queue: %s", listBodies(main), listBodies(dead))
			}
			return fmt.Sprintf("main: %s; dead-letter queue: %s, same MessageId %t, group %s", listBodies(main), listBodies(dead),
				aws.ToString(dead[0].MessageId) == id, dead[0].Attributes["MessageGroupId"])
		},
		want: "main: a2; dead-letter queue: a1, same MessageId true, group a",
	},
	{
		name: "deduplication interval 5 minutes",
		doc:  `"Using the message deduplication ID in Amazon SQS" (a MessageDeduplicationId seen in the 5-minute deduplication interval is accepted and not delivered, even after the first message was deleted)`,
		check: func(q *fifoQueue) string {
			first := q.send("a", "d1", "first")
			ms := q.receive(q.url, 10, 0)
			if len(ms) != 1 {
				return "receive: " + listBodies(ms)
			}
			q.del(ms[0].ReceiptHandle)
			again := q.send("a", "d1", "second")
			other := q.send("b", "d1", "other group")
			return fmt.Sprintf("send: %s; same id after delete: %s; same id, other group: %s; then: %s", first, again, other, listBodies(q.receive(q.url, 10, 0)))
		},
		want: "send: ok; same id after delete: ok; same id, other group: ok; then: -",
	},
	{
		name: "FIFO sends need a group id and a deduplication id",
		doc:  `"Amazon SQS message quotas" (MessageGroupId is required for FIFO queues); SendMessage API reference (MessageDeduplicationId or ContentBasedDeduplication)`,
		check: func(q *fifoQueue) string {
			_, noGroup := q.api.SendMessage(q.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("x")})
			_, noDedup := q.api.SendMessage(q.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String("x"), MessageGroupId: aws.String("g")})
			return fmt.Sprintf("no group: %s; no deduplication id: %s", codeOf(noGroup), codeOf(noDedup))
		},
		want: "no group: MissingParameter; no deduplication id: InvalidParameterValue",
	},
	{
		name: "MessageGroupId and MessageDeduplicationId length and characters",
		doc:  `"Amazon SQS message quotas" (MessageGroupId) and SendMessage API reference (MessageDeduplicationId): up to 128 characters of a-z, A-Z, 0-9 and punctuation`,
		check: func(q *fifoQueue) string {
			punct := `!"#$%&'()*+,-./:;<=>?@[\]^_` + "`{|}~"
			max := strings.Repeat("g", 128-len(punct)) + punct
			long := strings.Repeat("g", 129)
			return fmt.Sprintf("group 128: %s; group 129: %s; group with a space: %s; dedup 128: %s; dedup 129: %s; dedup with é: %s",
				q.send(max, "d1", "b1"), q.send(long, "d2", "b2"), q.send("a b", "d3", "b3"),
				q.send("g", max, "b4"), q.send("g", long, "b5"), q.send("g", "café", "b6"))
		},
		want: "group 128: ok; group 129: InvalidParameterValue; group with a space: InvalidParameterValue; " +
			"dedup 128: ok; dedup 129: InvalidParameterValue; dedup with é: InvalidParameterValue",
		differs: map[string]string{fauxqs: "group 128: ok; group 129: ok; group with a space: ok; dedup 128: ok; dedup 129: ok; dedup with é: ok"},
	},
	{
		name: "batch entry limits",
		doc:  `"Amazon SQS message quotas" (message batch: at most 10 entries; batched message ID: up to 80 characters of alphanumerics, hyphens and underscores); SendMessageBatch API reference (EmptyBatchRequest, TooManyEntriesInBatchRequest, BatchEntryIdsNotDistinct, InvalidBatchEntryId)`,
		check: func(q *fifoQueue) string {
			batch := func(ids ...string) string {
				in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: []sqstypes.SendMessageBatchRequestEntry{}}
				for i, id := range ids {
					in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String("b"),
						MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(fmt.Sprintf("%s-%d", ulid.Make(), i))})
				}
				_, err := q.api.SendMessageBatch(q.ctx, in)
				return codeOf(err)
			}
			var eleven []string
			for i := range 11 {
				eleven = append(eleven, strconv.Itoa(i))
			}
			return fmt.Sprintf("0 entries: %s; 10: %s; 11: %s; repeated id: %s; id with a dot: %s; id of 80: %s; id of 81: %s",
				batch(), batch(eleven[:10]...), batch(eleven...), batch("x", "x"), batch("a.b"),
				batch(strings.Repeat("i", 80)), batch(strings.Repeat("i", 81)))
		},
		want: "0 entries: EmptyBatchRequest; 10: ok; 11: TooManyEntriesInBatchRequest; repeated id: BatchEntryIdsNotDistinct; " +
			"id with a dot: InvalidBatchEntryId; id of 80: ok; id of 81: InvalidBatchEntryId",
		differs: map[string]string{fauxqs: "0 entries: EmptyBatchRequest; 10: ok; 11: TooManyEntriesInBatchRequest; repeated id: BatchEntryIdsNotDistinct; " +
			"id with a dot: InvalidBatchEntryId; id of 80: ok; id of 81: ok"},
	},
	{
		name: "batch size limits",
		doc: `SendMessageBatch API reference (each message at most the queue's MaximumMessageSize, here 262,144 bytes; ` +
			`the bodies together at most 1 MiB, else BatchRequestTooLong for the whole call)`,
		check: func(q *fifoQueue) string {
			batch := func(n, size int) string {
				in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url)}
				for i := range n {
					in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(strings.Repeat("x", size)),
						MessageGroupId: aws.String(strconv.Itoa(i)), MessageDeduplicationId: aws.String(ulid.Make().String())})
				}
				out, err := q.api.SendMessageBatch(q.ctx, in)
				if err != nil {
					return codeOf(err)
				}
				var failed []string
				for _, f := range out.Failed {
					failed = append(failed, aws.ToString(f.Code))
				}
				return fmt.Sprintf("%d sent %v", len(out.Successful), failed)
			}
			return fmt.Sprintf("one over 262,144 bytes: %s; 3 × 100,000: %s; 5 × 250,000: %s",
				batch(1, maxMessageSize+1), batch(3, 100000), batch(5, 250000))
		},
		want:    "one over 262,144 bytes: 0 sent [InvalidParameterValue]; 3 × 100,000: 3 sent []; 5 × 250,000: BatchRequestTooLong",
		differs: map[string]string{double: "one over 262,144 bytes: BatchRequestTooLong; 3 × 100,000: BatchRequestTooLong; 5 × 250,000: BatchRequestTooLong"},
		note: "the double keeps SQS's former 256 KiB limit for a batch's bodies together: engine/relay splits its batches at the queue's " +
			"MaximumMessageSize (262,144 bytes, docs/relay.md \"Size\"), and the double refusing more is what makes the relay's tests check that",
	},
	{
		name: "message body characters",
		doc:  `SendMessage API reference and "Amazon SQS message quotas" (message content: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF, anything else InvalidMessageContents)`,
		check: func(q *fifoQueue) string {
			return fmt.Sprintf("tab and newline: %s; U+0001: %s; U+FFFE: %s; U+1F600: %s",
				q.send("g", "d1", "a\tb\n"), q.send("g", "d2", "a\x01b"), q.send("g", "d3", "a\ufffeb"), q.send("g", "d4", "a\U0001F600b"))
		},
		want:    "tab and newline: ok; U+0001: InvalidMessageContents; U+FFFE: InvalidMessageContents; U+1F600: ok",
		differs: map[string]string{fauxqs: "tab and newline: ok; U+0001: InvalidMessageContents; U+FFFE: InvalidMessageContents; U+1F600: InvalidMessageContents"},
	},
}

// TestFIFOConformance runs every behaviour on the double and on fauxqs.
func TestFIFOConformance(t *testing.T) {
	impls := []struct {
		name string
		open func(*testing.T, queueConfig) *fifoQueue
	}{{double, openDouble}, {fauxqs, openFauxqs}}
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			for _, b := range behaviours {
				t.Run(b.name, func(t *testing.T) {
					t.Parallel()
					got := b.check(im.open(t, b.queue))
					wrong, known := b.differs[im.name]
					switch {
					case !known && got != b.want:
						t.Errorf("%s on %s:\n got  %s\n want %s\n as documented in %s", b.name, im.name, got, b.want, b.doc)
					case known && got == b.want:
						t.Errorf("%s on %s now behaves as documented in %s:\n %s\nremove its entry in differs and its line in docs/local-stack.md", b.name, im.name, b.doc, got)
					case known && got != wrong:
						t.Errorf("%s on %s changed:\n got   %s\n known %s\n documented %s", b.name, im.name, got, wrong, b.want)
					case known:
						t.Logf("%s differs from the documentation (%s), as known: %s; documented: %s. %s", im.name, b.doc, got, b.want, b.note)
					}
				})
			}
		})
	}
}

// TestFIFOConformanceDocumented: docs/local-stack.md names every
// behaviour on which an implementation is known to differ, so the doc's
// list and the table agree.
func TestFIFOConformanceDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/local-stack.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range behaviours {
		if len(b.differs) > 0 && !strings.Contains(string(doc), b.name) {
			t.Errorf("docs/local-stack.md does not name %q, on which %v differ", b.name, keys(b.differs))
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
