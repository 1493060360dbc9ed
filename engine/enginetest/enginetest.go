package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Queues is a FIFO test queue and its dead-letter queue.
type Queues struct {
	URL, DLQURL string
}

// FIFOQueues creates a FIFO queue named after base with the given
// visibility timeout, redriving to its own FIFO DLQ after maxReceive
// receives, and deletes both when the test ends.
func FIFOQueues(t testing.TB, base string, visibility time.Duration, maxReceive int) Queues {
	t.Helper()
	c := sqs.NewFromConfig(lstest.AWSConfig(t))
	ctx := Ctx(t)
	suffix := strings.ToLower(ulid.Make().String()[18:])
	name := lstest.Names(t).Stack + "-" + base + "-" + suffix
	dlq, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		t.Fatalf("create dlq for %s: %v", name, err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("dlq arn: %v", err)
	}
	redrive, _ := json.Marshal(map[string]string{"deadLetterTargetArn": attrs.Attributes["QueueArn"], "maxReceiveCount": strconv.Itoa(maxReceive)})
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + ".fifo"), Attributes: map[string]string{
		"FifoQueue":                 "true",
		"ContentBasedDeduplication": "false",
		"VisibilityTimeout":         strconv.Itoa(int(visibility.Seconds())),
		"RedrivePolicy":             string(redrive),
	}})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
		_, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: dlq.QueueUrl})
	})
	return Queues{URL: *q.QueueUrl, DLQURL: *dlq.QueueUrl}
}

// StandardQueue creates a standard queue named after base.
func StandardQueue(t testing.TB, base string) string {
	t.Helper()
	c := sqs.NewFromConfig(lstest.AWSConfig(t))
	name := lstest.Names(t).Stack + "-" + base + "-" + strings.ToLower(ulid.Make().String()[18:])
	q, err := c.CreateQueue(Ctx(t), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": "5"}})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
	return *q.QueueUrl
}

// Ctx returns the test's context with a generous hang guard: it ends
// after 2 minutes, or earlier a margin before the test binary's -timeout
// (testkit.Context), so a hang fails the test instead of panicking the
// binary.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(testkit.Context(t), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Envelope returns a sealed test envelope of typ for tenant at seq.
func Envelope(t testing.TB, tenant, typ string, seq uint64, payload map[string]any) engine.Envelope {
	t.Helper()
	if payload == nil {
		payload = map[string]any{"n": float64(seq)}
	}
	env := engine.Envelope{
		ID: ulid.Make().String(), Type: typ, Tenant: tenant, Actor: engine.DefaultActor,
		OccurredAt: time.Now().UTC().Truncate(time.Microsecond), Payload: payload, Seq: seq,
	}
	env.CorrelationID = env.ID
	if err := engine.Seal(&env, engine.Genesis); err != nil {
		t.Fatalf("seal: %v", err)
	}
	return env
}

// Body returns env as the events pipe delivers it: its row in DynamoDB JSON.
func Body(t testing.TB, env engine.Envelope) string {
	t.Helper()
	item, err := engine.EventItem(env)
	if err != nil {
		t.Fatalf("event item: %v", err)
	}
	b, err := marshalItem(item)
	if err != nil {
		t.Fatalf("marshal item: %v", err)
	}
	return string(b)
}

// PutEventRow writes env's event row and a head row straight into the
// events table, as Emit would (without the chain transaction).
func PutEventRow(ctx context.Context, c *dynamodb.Client, table string, env engine.Envelope) error {
	item, err := engine.EventItem(env)
	if err != nil {
		return err
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		return fmt.Errorf("put event %s: %w", env.ID, err)
	}
	head := map[string]ddbAV{
		engine.AttrPK: sv(engine.HeadPK(env.Tenant)), engine.AttrSK: sv(engine.HeadSK),
		engine.AttrLastSeq: nv(env.Seq), engine.AttrLastHash: sv(env.Hash), engine.AttrTenant: sv(env.Tenant),
		engine.AttrHeadTenant: sv(env.Tenant),
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: head}); err != nil {
		return fmt.Errorf("put head of %s: %w", env.Tenant, err)
	}
	return nil
}

// Drained is a message taken off a queue.
type Drained struct {
	Body, GroupID, DedupID, MessageID string
}

// Drain receives and deletes messages until stop returns true for what was
// received so far, or the context ends.
func Drain(ctx context.Context, t testing.TB, c *sqs.Client, url string, stop func([]Drained) bool) []Drained {
	t.Helper()
	var got []Drained
	for !stop(got) {
		if ctx.Err() != nil {
			t.Fatalf("drain %s: %v after %d messages", url, ctx.Err(), len(got))
		}
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			t.Fatalf("receive from %s: %v", url, err)
		}
		for _, m := range out.Messages {
			got = append(got, Drained{
				Body: aws.ToString(m.Body), MessageID: aws.ToString(m.MessageId),
				GroupID: m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)],
				DedupID: m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageDeduplicationId)],
			})
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete from %s: %v", url, err)
			}
		}
	}
	return got
}

// Depth returns the approximate number of visible plus in-flight messages.
func Depth(ctx context.Context, t testing.TB, c *sqs.Client, url string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	}})
	if err != nil {
		t.Fatalf("queue attributes of %s: %v", url, err)
	}
	a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return a + b
}
