package eventsource_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bowline-iot/bowline/cloud/eventsource"
)

// The Lambda adapter hands the event's records over as Records and turns
// failedFrom into the one batchItemFailures entry, an error into the
// invocation's error.
func TestLambdaHandlerAdaptsEventAndResponse(t *testing.T) {
	at := time.Unix(1764633600, 0).UTC()
	ev := events.KinesisEvent{Records: []events.KinesisEventRecord{
		{EventID: "shardId-000000000003:4959", Kinesis: events.KinesisRecord{Data: []byte("a"), PartitionKey: "gw-1", SequenceNumber: "4959", ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: at}}},
		{EventID: "shardId-000000000003:4960", Kinesis: events.KinesisRecord{Data: []byte("b"), PartitionKey: "gw-2", SequenceNumber: "4960", ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: at}}},
	}}
	want := []eventsource.Record{
		{Data: []byte("a"), PartitionKey: "gw-1", SequenceNumber: "4959", ShardID: "shardId-000000000003", ArrivalTime: at},
		{Data: []byte("b"), PartitionKey: "gw-2", SequenceNumber: "4960", ShardID: "shardId-000000000003", ArrivalTime: at},
	}
	for _, tc := range []struct {
		failedFrom string
		err        error
		want       []events.KinesisBatchItemFailure
	}{
		{"", nil, nil},
		{"4960", nil, []events.KinesisBatchItemFailure{{ItemIdentifier: "4960"}}},
		{"", errors.New("down"), nil},
	} {
		var got []eventsource.Record
		h := eventsource.LambdaHandler(func(ctx context.Context, recs []eventsource.Record) (string, error) {
			got = recs
			return tc.failedFrom, tc.err
		})
		resp, err := h(t.Context(), ev)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("records %+v; want %+v", got, want)
		}
		if !errors.Is(err, tc.err) || !reflect.DeepEqual(resp.BatchItemFailures, tc.want) {
			t.Errorf("handler (%q, %v): response %+v, %v; want %+v, %v", tc.failedFrom, tc.err, resp.BatchItemFailures, err, tc.want, tc.err)
		}
	}
}

// Spec.Validate keeps a mapping inside the ranges Lambda documents.
func TestSpecValidate(t *testing.T) {
	if err := eventsource.TelemetryConsumer.Validate(); err != nil {
		t.Fatalf("TelemetryConsumer.Validate() = %v; want nil", err)
	}
	for name, mutate := range map[string]func(*eventsource.Spec){
		"batch 0":       func(s *eventsource.Spec) { s.BatchSize = 0 },
		"batch 10001":   func(s *eventsource.Spec) { s.BatchSize = 10001 },
		"window 301":    func(s *eventsource.Spec) { s.MaximumBatchingWindowInSeconds = 301 },
		"LATEST":        func(s *eventsource.Spec) { s.StartingPosition = "LATEST" },
		"parallel 11":   func(s *eventsource.Spec) { s.ParallelizationFactor = 11 },
		"retries -2":    func(s *eventsource.Spec) { s.MaximumRetryAttempts = -2 },
		"age 59":        func(s *eventsource.Spec) { s.MaximumRecordAgeInSeconds = 59 },
		"age 604801":    func(s *eventsource.Spec) { s.MaximumRecordAgeInSeconds = 604801 },
		"response type": func(s *eventsource.Spec) { s.FunctionResponseTypes = []string{"Other"} },
		"name":          func(s *eventsource.Spec) { s.Name = "" },
	} {
		s := eventsource.TelemetryConsumer
		s.FunctionResponseTypes = append([]string(nil), s.FunctionResponseTypes...)
		mutate(&s)
		if err := s.Validate(); !errors.Is(err, eventsource.ErrBadSpec) {
			t.Errorf("%s: Validate() = %v; want ErrBadSpec", name, err)
		}
	}
}
