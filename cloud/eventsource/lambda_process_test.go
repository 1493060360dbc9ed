package eventsource_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// lambdaChildEnv makes the test binary run as a Lambda function.
const lambdaChildEnv = "BOWLINE_TEST_LAMBDA_CHILD"

// runLambdaChild serves, through aws-lambda-go's runtime client, a
// handler that fails from the record whose data is "bad" and errors on
// a record "err".
func runLambdaChild() {
	eventsource.StartLambda(func(ctx context.Context, recs []eventsource.Record) (string, error) {
		for _, r := range recs {
			switch string(r.Data) {
			case "bad":
				return r.SequenceNumber, nil
			case "err":
				return "", errors.New("store down")
			}
		}
		return "", nil
	})
}

// The function, a real process under aws-lambda-go's runtime client, answers
// a Kinesis event with batchItemFailures naming the first failed record,
// and an invocation error for a failed batch: what a Kinesis event source
// mapping with ReportBatchItemFailures reads.
func TestLambdaRuntimeGetsBatchItemFailures(t *testing.T) {
	event := func(data ...string) []byte {
		var ev events.KinesisEvent
		for i, d := range data {
			seq := string(rune('1' + i))
			ev.Records = append(ev.Records, events.KinesisEventRecord{
				EventID: "shardId-000000000000:" + seq, EventSource: "aws:kinesis",
				Kinesis: events.KinesisRecord{Data: []byte(d), PartitionKey: "gw-1", SequenceNumber: seq},
			})
		}
		b, _ := json.Marshal(ev)
		return b
	}
	invocations := [][]byte{event("ok", "bad", "ok"), event("err"), event("ok")}
	var (
		mu      sync.Mutex
		next    int
		results = map[string]string{}
	)
	gotAll := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, "/2018-06-01/runtime/invocation/")
		if path == "next" {
			mu.Lock()
			i := next
			next++
			mu.Unlock()
			if i >= len(invocations) {
				<-r.Context().Done() // no more work: the runtime waits
				return
			}
			w.Header().Set("Lambda-Runtime-Aws-Request-Id", "req-"+string(rune('0'+i)))
			w.Header().Set("Lambda-Runtime-Deadline-Ms", itoa64(time.Now().Add(time.Minute).UnixMilli()))
			w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:eu-west-1:123456789012:function:prod-bowline-telemetry-consumer")
			_, _ = w.Write(invocations[i])
			return
		}
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		results[path] = string(body)
		if len(results) == len(invocations) {
			close(gotAll)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)

	cmd := testkit.TestBinary()
	cmd.Env = append(os.Environ(), lambdaChildEnv+"=1", eventsource.RuntimeAPIEnv+"="+strings.TrimPrefix(srv.URL, "http://"))
	testkit.StartChild(t, "lambda", cmd) // killed at cleanup
	select {
	case <-gotAll:
	case <-time.After(30 * time.Second):
		t.Fatalf("runtime answered %v; want %d answers", results, len(invocations))
	}
	mu.Lock()
	defer mu.Unlock()
	var resp events.KinesisEventResponse
	if err := json.Unmarshal([]byte(results["req-0/response"]), &resp); err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "2" {
		t.Errorf("partial failure answered %q (%v); want batchItemFailures [{itemIdentifier: 2}]", results["req-0/response"], err)
	}
	if body, ok := results["req-1/error"]; !ok || !strings.Contains(body, "store down") {
		t.Errorf("failed batch answered %v; want an invocation error with the message", results)
	}
	if err := json.Unmarshal([]byte(results["req-2/response"]), &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("good batch answered %q (%v); want no batchItemFailures", results["req-2/response"], err)
	}
}

func itoa64(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
