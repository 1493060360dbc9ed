package rules_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// putRecorder keeps every PutRecord.
type putRecorder struct {
	mu   sync.Mutex
	puts []*kinesis.PutRecordInput
}

func (p *putRecorder) PutRecord(_ context.Context, in *kinesis.PutRecordInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordOutput, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.puts = append(p.puts, in)
	return &kinesis.PutRecordOutput{}, nil
}

// TestReplayPutsErrorMessagesBack: the messages of the error queue (an
// event by Basic Ingest, a v1 event through the broker, a telemetry batch)
// go back into their rules' streams as the action would have written them,
// and leave the queue; one that is no error message stays, visible. A dry
// run puts and deletes nothing and leaves every message visible.
func TestReplayPutsErrorMessagesBack(t *testing.T) {
	cfg := lstest.AWSConfig(t)
	q := sqs.NewFromConfig(cfg)
	out, err := q.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(unique("rule-errors-")), Attributes: map[string]string{"VisibilityTimeout": "30"}})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	event := []byte(`{"v":1,"thing":"gw-1:kitchen","seq":7,"id":"meal-7","type":"bowl.meal_finished"}`)
	msgs := map[string]rules.ErrorMessage{
		"basic ingest": {RuleName: rules.Events.Name("dev"), Topic: wire.BasicIngestTopic(rules.Events.Name("dev"), wire.Topic{Tenant: "t1", Thing: "gw-1:kitchen", Kind: wire.KindEvents}), Base64OriginalPayload: base64.StdEncoding.EncodeToString(event)},
		"v1 broker":    {RuleName: rules.Events.Name("dev"), Topic: wire.Topic{Tenant: "t2", Thing: "gw-2", Kind: wire.KindEvents}.String(), Base64OriginalPayload: base64.StdEncoding.EncodeToString(event)},
		"telemetry":    {RuleName: rules.Telemetry.Name("dev"), Topic: wire.BasicIngestTopic(rules.Telemetry.Name("dev"), wire.Topic{Tenant: "t1", Thing: "gw-1", Kind: wire.KindBatch}), Base64OriginalPayload: "AgA="},
	}
	for _, m := range msgs {
		body, _ := json.Marshal(m)
		if _, err := q.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(body))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("not json")}); err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1764633600123)
	streams := func(s rules.Spec) string { return "stream-" + s.Base }

	dry := &putRecorder{}
	r := &rules.Replayer{Queue: q, QueueURL: url, Kinesis: dry, Stack: "dev", Stream: streams, Now: func() time.Time { return now }, DryRun: true}
	res, err := r.Replay(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.puts) != 0 || res.Put["events"] != 2 || res.Put["telemetry"] != 1 || len(res.Skipped) != 1 {
		t.Fatalf("dry run = %+v with %d puts; want 2 events and 1 telemetry counted, 1 skipped, nothing put", res, len(dry.puts))
	}

	kin := &putRecorder{}
	r2 := &rules.Replayer{Queue: q, QueueURL: url, Kinesis: kin, Stack: "dev", Stream: streams, Now: func() time.Time { return now }}
	res, err = r2.Replay(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Put["events"] != 2 || res.Put["telemetry"] != 1 || len(res.Skipped) != 1 {
		t.Fatalf("replay = %+v; want 2 events and 1 telemetry put, 1 skipped", res)
	}
	got := map[string]string{}
	for _, p := range kin.puts {
		got[aws.ToString(p.PartitionKey)+" "+aws.ToString(p.StreamName)] = string(p.Data)
	}
	wantRec, _, _ := rules.Events.Evaluate("dt/bowline/t1/gw-1:kitchen/events", event, now)
	if got["t1 stream-events"] != string(wantRec) {
		t.Errorf("replayed records %v; want t1's event in stream-events as %s", got, wantRec)
	}
	if _, ok := got["t2 stream-events"]; !ok {
		t.Errorf("replayed records %v; want the v1 event of t2 (partition key = tenant)", got)
	}
	if _, ok := got["gw-1 stream-telemetry"]; !ok {
		t.Errorf("replayed records %v; want the batch of gw-1 in stream-telemetry", got)
	}
	left, err := q.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Messages) != 1 || aws.ToString(left.Messages[0].Body) != "not json" {
		t.Errorf("queue left with %d messages; want only the one that is no error message, visible again", len(left.Messages))
	}
}
