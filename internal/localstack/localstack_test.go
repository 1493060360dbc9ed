package localstack_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
)

func TestMain(m *testing.M) { lstest.Main(m) }

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func TestProvisionIsIdempotent(t *testing.T) {
	cfg := lstest.AWSConfig(t)
	n, err := resources.New("prov-" + strings.ToLower(lstest.Names(t).Stack))
	if err != nil {
		t.Fatal(err)
	}
	first, err := provision.Provision(ctx(t), cfg, n, provision.Options{})
	if err != nil {
		t.Fatalf("first provision: %v", err)
	}
	// Every table and queue of the plan, and the two Kinesis streams
	// (telemetry, events).
	plan := provision.PlanFor(n, provision.Options{})
	if got, want := len(first.Resources), len(plan.Tables)+len(plan.Queues)+2; got != want {
		t.Fatalf("first provision made %d resources; want %d: %+v", got, want, first.Resources)
	}
	for _, r := range first.Resources {
		if !r.Created {
			t.Errorf("first provision: %s %s Created = false; want true", r.Kind, r.Name)
		}
		if r.ARN == "" {
			t.Errorf("first provision: %s %s has no ARN", r.Kind, r.Name)
		}
	}
	second, err := provision.Provision(ctx(t), cfg, n, provision.Options{})
	if err != nil {
		t.Fatalf("second provision: %v", err)
	}
	for i, r := range second.Resources {
		if r.Created {
			t.Errorf("second provision created %s %s again; want a no-op", r.Kind, r.Name)
		}
		if r.ARN != first.Resources[i].ARN {
			t.Errorf("second provision %s ARN = %q; want %q", r.Name, r.ARN, first.Resources[i].ARN)
		}
	}
}

func TestDynamoDBTransactionConditionFails(t *testing.T) {
	c := dynamodb.NewFromConfig(lstest.AWSConfig(t))
	table := lstest.Names(t).AppTable()
	item := func(v string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: "PROBE#1"},
			"sk": &ddbtypes.AttributeValueMemberS{Value: "x"},
			"v":  &ddbtypes.AttributeValueMemberS{Value: v},
		}
	}
	put := func(v string) error {
		_, err := c.TransactWriteItems(ctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{{
			Put: &ddbtypes.Put{TableName: &table, Item: item(v), ConditionExpression: aws.String("attribute_not_exists(pk)")},
		}}})
		return err
	}
	if err := put("one"); err != nil {
		t.Fatalf("first conditional put: %v", err)
	}
	err := put("two")
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("second conditional put error = %v; want TransactionCanceledException", err)
	}
	if len(tce.CancellationReasons) != 1 || aws.ToString(tce.CancellationReasons[0].Code) != "ConditionalCheckFailed" {
		t.Fatalf("cancellation reasons = %+v; want one ConditionalCheckFailed", tce.CancellationReasons)
	}
}

func TestSQSFIFODropsRepeatedDeduplicationID(t *testing.T) {
	c := sqs.NewFromConfig(lstest.AWSConfig(t))
	q, err := c.GetQueueUrl(ctx(t), &sqs.GetQueueUrlInput{QueueName: aws.String(lstest.Names(t).EventsQueue())})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"first", "second"} {
		if _, err := c.SendMessage(ctx(t), &sqs.SendMessageInput{
			QueueUrl: q.QueueUrl, MessageBody: aws.String(body),
			MessageGroupId: aws.String("tenant-1"), MessageDeduplicationId: aws.String("event-1"),
		}); err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
	}
	var bodies []string
	for range 3 {
		out, err := c.ReceiveMessage(ctx(t), &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := c.DeleteMessage(ctx(t), &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(bodies) != 1 || bodies[0] != "first" {
		t.Fatalf("received %q; want only [first] (the repeated deduplication id must be dropped)", bodies)
	}
}

func TestKinesisRoundTrip(t *testing.T) {
	c := kinesis.NewFromConfig(lstest.AWSConfig(t))
	stream := lstest.Names(t).TelemetryStream()
	put, err := c.PutRecords(ctx(t), &kinesis.PutRecordsInput{StreamName: &stream, Records: []kintypes.PutRecordsRequestEntry{
		{Data: []byte(`{"n":1}`), PartitionKey: aws.String("bowl-1")},
		{Data: []byte(`{"n":2}`), PartitionKey: aws.String("bowl-1")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToInt32(put.FailedRecordCount) != 0 {
		t.Fatalf("PutRecords failed %d records", aws.ToInt32(put.FailedRecordCount))
	}
	shard := put.Records[0].ShardId
	it, err := c.GetShardIterator(ctx(t), &kinesis.GetShardIteratorInput{StreamName: &stream, ShardId: shard, ShardIteratorType: kintypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	iter := it.ShardIterator
	for i := 0; i < 10 && len(got) < 2; i++ {
		out, err := c.GetRecords(ctx(t), &kinesis.GetRecordsInput{ShardIterator: iter, StreamARN: nil})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Records {
			got = append(got, string(r.Data))
		}
		iter = out.NextShardIterator
	}
	if strings.Join(got, ",") != `{"n":1},{"n":2}` {
		t.Fatalf("GetRecords = %q; want the two records in order", got)
	}
}

func TestMQTTBrokerRoundTrip(t *testing.T) {
	addr := lstest.Stack(t).MQTTAddr
	got := make(chan string, 1)
	opts := paho.NewClientOptions().AddBroker(addr).SetClientID("probe")
	c := paho.NewClient(opts)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s: %v", addr, tok.Error())
	}
	defer c.Disconnect(100)
	if tok := c.Subscribe("dt/probe", 1, func(_ paho.Client, m paho.Message) { got <- string(m.Payload()) }); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	if tok := c.Publish("dt/probe", 1, false, "hello"); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
	select {
	case m := <-got:
		if m != "hello" {
			t.Fatalf("got %q; want hello", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
	}
}

// TestCloseLeavesNoChild starts a second, separate stack and checks that
// Close reaps every emulator process.
func TestCloseLeavesNoChild(t *testing.T) {
	lstest.Stack(t) // the emulators are installed
	s, err := localstack.Start(ctx(t), localstack.Config{Services: []localstack.Service{localstack.DynamoDB, localstack.SQS, localstack.Kinesis}})
	if err != nil {
		t.Fatal(err)
	}
	pids := s.Pids()
	if len(pids) != 3 {
		t.Fatalf("Pids() = %v; want 3 children", pids)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("child %d not running before Close: %v", pid, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, pid := range pids {
		// Reaped children no longer exist: kill(pid, 0) reports ESRCH.
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("child %d still exists after Close (kill 0 = %v)", pid, err)
		}
	}
}

func TestMissingEmulatorSaysHowToInstall(t *testing.T) {
	_, err := localstack.Start(ctx(t), localstack.Config{Services: []localstack.Service{localstack.DynamoDB}, Root: t.TempDir()})
	if !errors.Is(err, localstack.ErrNotInstalled) {
		t.Fatalf("Start with an empty root: err = %v; want ErrNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "DynamoDB Local jar not found") || !strings.Contains(err.Error(), "./scripts/setup") {
		t.Fatalf("error %q does not name the emulator and the fix", err)
	}
}
