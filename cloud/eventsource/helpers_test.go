package eventsource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/backoff"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestMain(m *testing.M) {
	if os.Getenv(lambdaChildEnv) == "1" {
		runLambdaChild() // the function of TestLambdaRuntimeGetsBatchItemFailures
		return
	}
	lstest.Main(m, localstack.Kinesis, localstack.DynamoDB, localstack.SQS)
}

// env is one test's stream, clients and on-failure queue.
type env struct {
	t      *testing.T
	kin    *kinesis.Client
	ddb    *dynamodb.Client
	sqs    *sqs.Client
	stream string
	table  string
	dlq    string
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)

// newEnv creates a stream of shards shards for the test.
func newEnv(t *testing.T, shards int32) *env {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	names := lstest.Names(t)
	e := &env{
		t: t, kin: kinesis.NewFromConfig(cfg), ddb: dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions), sqs: sqs.NewFromConfig(cfg),
		stream: names.Stack + "-" + unsafeName.ReplaceAllString(t.Name(), "-"), table: names.InboxTable(),
	}
	ctx := t.Context()
	if _, err := e.kin.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(e.stream), ShardCount: aws.Int32(shards)}); err != nil {
		t.Fatalf("create stream %s: %v", e.stream, err)
	}
	e.waitActive()
	q, err := e.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(names.TelemetryConsumerDLQ())})
	if err != nil {
		t.Fatal(err)
	}
	e.dlq = aws.ToString(q.QueueUrl)
	return e
}

func (e *env) waitActive() {
	e.t.Helper()
	testkit.WaitFor(e.t, "stream "+e.stream+" active", 30*time.Second, func() bool {
		out, err := e.kin.DescribeStreamSummary(e.t.Context(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(e.stream)})
		return err == nil && out.StreamDescriptionSummary.StreamStatus == ktypes.StreamStatusActive
	})
}

// put writes record n of key (data "key:n") and returns its sequence number.
func (e *env) put(key string, n int) string {
	e.t.Helper()
	out, err := e.kin.PutRecord(e.t.Context(), &kinesis.PutRecordInput{
		StreamName: aws.String(e.stream), PartitionKey: aws.String(key), Data: []byte(key + ":" + strconv.Itoa(n)),
	})
	if err != nil {
		e.t.Fatalf("put %s:%d: %v", key, n, err)
	}
	return aws.ToString(out.SequenceNumber)
}

// spec is a fast mapping for tests, named after the test.
func (e *env) spec() eventsource.Spec {
	s := eventsource.TelemetryConsumer
	s.Name = unsafeName.ReplaceAllString(e.t.Name(), "-")
	s.BatchSize = 10
	s.MaximumBatchingWindowInSeconds = 0
	s.MaximumRetryAttempts = 2
	return s
}

// runner starts a Runner on the test's stream; stop cancels it and waits.
func (e *env) runner(spec eventsource.Spec, h eventsource.Handler) (stop func()) {
	e.t.Helper()
	r, err := eventsource.New(eventsource.Config{
		Spec: spec, Kinesis: e.kin, Stream: e.stream, Handler: h,
		Checkpoints: e.ddb, CheckpointTable: e.table, OnFailure: e.sqs, OnFailureURL: e.dlq,
		PollInterval: 200 * time.Millisecond, ShardRefresh: 300 * time.Millisecond,
		Retry:  backoff.Policy{Base: 20 * time.Millisecond, Max: 100 * time.Millisecond},
		Logger: testkit.Logger(e.t, slog.LevelWarn),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("Run() = %v; want nil", err)
			}
		})
	}
	e.t.Cleanup(stop)
	return stop
}

// checkpoint is the seq of mapping's checkpoint row for shard, "" if none.
func (e *env) checkpoint(mapping, shard string) string {
	e.t.Helper()
	out, err := e.ddb.GetItem(e.t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: eventsource.CheckpointKey(mapping, e.stream, shard)}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if v, ok := out.Item["seq"].(*ddbtypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// failures receives the on-failure queue's records of mapping.
func (e *env) failures(mapping string) []eventsource.FailureRecord {
	e.t.Helper()
	out, err := e.sqs.ReceiveMessage(e.t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.dlq), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	var got []eventsource.FailureRecord
	for _, m := range out.Messages {
		var fr eventsource.FailureRecord
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &fr); err != nil {
			e.t.Fatalf("failure record %s: %v", aws.ToString(m.Body), err)
		}
		if fr.Mapping != mapping {
			continue // another test's; left visible again after the timeout
		}
		got = append(got, fr)
		if _, err := e.sqs.DeleteMessage(e.t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.dlq), ReceiptHandle: m.ReceiptHandle}); err != nil {
			e.t.Fatal(err)
		}
	}
	return got
}

// handled is what a recording handler saw, in the order it was handed.
type handled struct {
	mu    sync.Mutex
	order []eventsource.Record
	batch [][]eventsource.Record
}

func (h *handled) add(recs []eventsource.Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.order = append(h.order, recs...)
	h.batch = append(h.batch, recs)
}

func (h *handled) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.order)
}

// distinct is the number of distinct records handled.
func (h *handled) distinct() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	for _, r := range h.order {
		seen[string(r.Data)] = true
	}
	return len(seen)
}

// checkKeyOrder fails unless every key's records 0..want[key]-1 were all
// handled, each first seen only after every earlier one of its key.
func (h *handled) checkKeyOrder(t *testing.T, want map[string]int) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	next := map[string]int{}
	for _, r := range h.order {
		key, nStr, _ := strings.Cut(string(r.Data), ":")
		n, _ := strconv.Atoi(nStr)
		switch {
		case n == next[key]:
			next[key]++
		case n > next[key]:
			t.Errorf("key %s: record %d handled before record %d; want key order", key, n, next[key])
			return
		}
	}
	for key, w := range want {
		if next[key] != w {
			t.Errorf("key %s: records 0..%d handled; want 0..%d", key, next[key]-1, w-1)
		}
	}
}

func keyName(i int) string { return fmt.Sprintf("gw-%02d", i) }
