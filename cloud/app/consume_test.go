package app_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/deploy/cfn/iamtest"
	"github.com/bowline-iot/bowline/internal/backoff"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestEventSourceRunsUnderConsumerRole: the event source App builds reads
// the stack's telemetry stream into the handler and sends what it gives
// up on to telemetry-consumer-dlq, and every call it makes in AWS's place
// is one ConsumerRole allows (the recorded-calls check of docs/iam.md);
// its checkpoints are the stand-in's own.
func TestEventSourceRunsUnderConsumerRole(t *testing.T) {
	iamtest.Record(t)
	names := lstest.Names(t)
	a, err := app.Open(app.Config{AWS: lstest.AWSConfig(t), Names: names, Part: app.PartConsume, Logger: testkit.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	kin := kinesis.NewFromConfig(lstest.AWSConfig(t))
	var poison string
	for i, key := range []string{"gw-1", "gw-2", "gw-3"} {
		out, err := kin.PutRecord(t.Context(), &kinesis.PutRecordInput{StreamName: aws.String(names.TelemetryStream()), PartitionKey: aws.String(key), Data: []byte(key)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			poison = aws.ToString(out.SequenceNumber)
		}
	}
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	r, err := a.EventSource(t.Context(), func(ctx context.Context, recs []eventsource.Record) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, rec := range recs {
			if rec.SequenceNumber == poison {
				return rec.SequenceNumber, errors.New("poison")
			}
			seen[string(rec.Data)] = true
		}
		return "", nil
	}, func(c *eventsource.Config) {
		c.PollInterval, c.ShardRefresh = 200*time.Millisecond, 300*time.Millisecond
		c.Retry = backoff.Policy{Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	testkit.WaitFor(t, "gw-1 and gw-3 handled", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen["gw-1"] && seen["gw-3"]
	})
	// The poison's 1+10 tries at 20 ms, then its failure record.
	time.Sleep(2 * time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v; want nil", err)
	}
}
