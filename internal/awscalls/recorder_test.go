package awscalls

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// canned answers every request with a fixed JSON body per X-Amz-Target
// operation, so the clients run their whole middleware stack offline.
type canned map[string]string

func (c canned) Do(r *http.Request) (*http.Response, error) {
	target := r.Header.Get("X-Amz-Target")
	body := "{}"
	for op, b := range c {
		if strings.HasSuffix(target, "."+op) {
			body = b
		}
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

func testConfig(c canned) aws.Config {
	return aws.Config{
		Region: "eu-west-1", Credentials: aws.AnonymousCredentials{},
		HTTPClient: c, BaseEndpoint: aws.String("http://127.0.0.1:9"), RetryMaxAttempts: 1,
	}
}

// TestRecorderMiddleware: clients built from Recorder.Config record each
// distinct request once, under their label; GetRecords is attributed to
// the stream whose iterator it uses; a claimed transaction item is
// recorded under the claiming part; Cached marks a request answered from a
// cache.
func TestRecorderMiddleware(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	rec, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := Open(path); again != rec {
		t.Errorf("Open(%s) twice gave two recorders; want one per process and path", path)
	}
	cfg := testConfig(canned{
		"GetShardIterator": `{"ShardIterator":"it-1"}`,
		"GetRecords":       `{"Records":[],"NextShardIterator":"it-2"}`,
		"GetQueueUrl":      `{"QueueUrl":"http://127.0.0.1:9/000000000000/p-bowline-events.fifo"}`,
	})
	worker := rec.Config(cfg, Label{Part: "worker", Stack: "p"})
	q := sqs.NewFromConfig(worker)
	for range 2 {
		if _, err := q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("p-bowline-events.fifo")}); err != nil {
			t.Fatal(err)
		}
	}
	st := dynamodbstreams.NewFromConfig(rec.Config(cfg, Label{Part: "relay:events", Stack: "p"}))
	streamARN := "arn:aws:dynamodb:ddblocal:000000000000:table/p-bowline-events/stream/2026-01-01T00:00:00.000"
	if _, err := st.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(streamARN), ShardId: aws.String("s1"), ShardIteratorType: "TRIM_HORIZON"}); err != nil {
		t.Fatal(err)
	}
	for _, it := range []string{"it-1", "it-2"} {
		if _, err := st.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)}); err != nil {
			t.Fatal(err)
		}
	}
	db := dynamodb.NewFromConfig(rec.Config(cfg, Label{Part: "engine", Stack: "p"}))
	own := &ddbtypes.Put{TableName: aws.String("p-bowline-app"), Item: map[string]ddbtypes.AttributeValue{"pk": s("ORDER#1")}}
	release := rec.Claim("api", []ddbtypes.TransactWriteItem{{Put: own}})
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String("p-bowline-events"), Item: map[string]ddbtypes.AttributeValue{"pk": s("TENANT#t#EVENT")}}},
		{Put: own},
	}})
	release()
	if err != nil {
		t.Fatal(err)
	}
	rec.Cached(Label{Part: "api", Stack: "p"}, "SQS", "GetQueueUrl", &sqs.GetQueueUrlInput{QueueName: aws.String("p-bowline-events-dlq.fifo")}, "eu-west-1")

	calls, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	type got struct{ part, action, resource string }
	var seen []got
	for _, c := range calls {
		if c.Error != "" {
			t.Errorf("recorded %+v with error %q", c, c.Error)
		}
		seen = append(seen, got{c.Part, c.Action, c.Resource})
	}
	stream := "arn:aws:dynamodb:eu-west-1:123456789012:table/p-bowline-events/stream/2026-01-01T00:00:00.000"
	want := []got{
		{"worker", "sqs:GetQueueUrl", "arn:aws:sqs:eu-west-1:123456789012:p-bowline-events.fifo"},
		{"relay:events", "dynamodb:GetShardIterator", stream},
		{"relay:events", "dynamodb:GetRecords", stream},
		{"engine", "dynamodb:PutItem", "arn:aws:dynamodb:eu-west-1:123456789012:table/p-bowline-events"},
		{"api", "dynamodb:PutItem", "arn:aws:dynamodb:eu-west-1:123456789012:table/p-bowline-app"},
		{"api", "sqs:GetQueueUrl", "arn:aws:sqs:eu-west-1:123456789012:p-bowline-events-dlq.fifo"},
	}
	if len(seen) != len(want) {
		t.Fatalf("recorded %d requests %+v; want %d %+v", len(seen), seen, len(want), want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("request %d = %+v; want %+v", i, seen[i], want[i])
		}
	}
	if c := calls[len(calls)-1]; !c.Cached || c.Stack != "p" {
		t.Errorf("cached request = %+v; want Cached on stack p", c)
	}
}

// TestNilRecorder: with recording off, Config leaves the configuration
// alone and the other methods do nothing.
func TestNilRecorder(t *testing.T) {
	t.Setenv(Env, "")
	rec, err := FromEnv()
	if err != nil || rec != nil {
		t.Fatalf("FromEnv with %s empty = %v, %v; want nil, nil", Env, rec, err)
	}
	cfg := testConfig(canned{})
	if got := rec.Config(cfg, Label{Part: "x"}); len(got.APIOptions) != 0 {
		t.Errorf("nil Recorder added %d API options", len(got.APIOptions))
	}
	rec.Claim("x", []ddbtypes.TransactWriteItem{{Put: &ddbtypes.Put{}}})()
	rec.Cached(Label{}, "SQS", "GetQueueUrl", &sqs.GetQueueUrlInput{}, "r")
}
