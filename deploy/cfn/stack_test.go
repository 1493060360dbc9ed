package cfn

import (
	"reflect"
	"testing"

	"github.com/bowline-iot/bowline/internal/resources"
)

func prop(t *testing.T, tpl *Template, logical string, path ...string) any {
	t.Helper()
	r, ok := tpl.Resources[logical]
	if !ok {
		t.Fatalf("resource %s missing", logical)
	}
	var v any = r.Properties
	for _, p := range path {
		v = asMap(v)[p]
	}
	return v
}

// TestTablesAsDesigned: keys, streams, TTL, point-in-time recovery and
// deletion protection of the five tables (docs/contract.md, "Tables").
func TestTablesAsDesigned(t *testing.T) {
	tpl := stackTemplate(t)
	for _, tc := range []struct {
		logical string
		keys    []any
		stream  any
		ttl     any
	}{
		{"EventsTable", []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}, map[string]any{"AttributeName": "sk", "KeyType": "RANGE"}}, "NEW_AND_OLD_IMAGES", nil},
		{"InboxTable", []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}}, nil, "ttl"},
		{"DeadLettersTable", []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}, map[string]any{"AttributeName": "sk", "KeyType": "RANGE"}}, nil, "ttl"},
		{"AppTable", []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}, map[string]any{"AttributeName": "sk", "KeyType": "RANGE"}}, "NEW_AND_OLD_IMAGES", nil},
		{"AnchorsTable", []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}, map[string]any{"AttributeName": "sk", "KeyType": "RANGE"}}, nil, nil},
	} {
		if got := prop(t, tpl, tc.logical, "KeySchema"); !reflect.DeepEqual(got, tc.keys) {
			t.Errorf("%s KeySchema = %v; want %v", tc.logical, got, tc.keys)
		}
		if got := prop(t, tpl, tc.logical, "StreamSpecification", "StreamViewType"); got != tc.stream {
			t.Errorf("%s stream = %v; want %v", tc.logical, got, tc.stream)
		}
		if got := prop(t, tpl, tc.logical, "TimeToLiveSpecification", "AttributeName"); got != tc.ttl {
			t.Errorf("%s TTL attribute = %v; want %v", tc.logical, got, tc.ttl)
		}
		if tc.ttl != nil && prop(t, tpl, tc.logical, "TimeToLiveSpecification", "Enabled") != true {
			t.Errorf("%s TTL not enabled", tc.logical)
		}
		if got := prop(t, tpl, tc.logical, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"); got != true {
			t.Errorf("%s point-in-time recovery = %v; want true", tc.logical, got)
		}
		if got := prop(t, tpl, tc.logical, "DeletionProtectionEnabled"); got != true {
			t.Errorf("%s deletion protection = %v; want true", tc.logical, got)
		}
		if got := tpl.Resources[tc.logical].Attributes["DeletionPolicy"]; got != "Retain" {
			t.Errorf("%s DeletionPolicy = %v; want Retain", tc.logical, got)
		}
	}
}

// TestQueuesAsDesigned: events.fifo is FIFO without content-based
// deduplication (the dedup id is the event id), redrives to events-dlq.fifo
// after resources.EventsMaxReceiveCount receives, keeps messages hidden 60s
// (longer than the worker's 30s lease), and every queue is encrypted.
func TestQueuesAsDesigned(t *testing.T) {
	tpl := stackTemplate(t)
	for _, q := range []string{"EventsQueue", "EventsDLQ"} {
		if prop(t, tpl, q, "FifoQueue") != true || prop(t, tpl, q, "ContentBasedDeduplication") != false {
			t.Errorf("%s: FifoQueue %v, ContentBasedDeduplication %v; want true, false", q,
				prop(t, tpl, q, "FifoQueue"), prop(t, tpl, q, "ContentBasedDeduplication"))
		}
	}
	if got := prop(t, tpl, "RecordChangesQueue", "FifoQueue"); got != nil && got != false {
		t.Errorf("RecordChangesQueue FifoQueue = %v; want a standard queue", got)
	}
	rp := asMap(prop(t, tpl, "EventsQueue", "RedrivePolicy"))
	if got := rp["maxReceiveCount"]; got != resources.EventsMaxReceiveCount {
		t.Errorf("events maxReceiveCount = %v; want %d", got, resources.EventsMaxReceiveCount)
	}
	if !RefersTo(rp["deadLetterTargetArn"], "EventsDLQ") {
		t.Errorf("events deadLetterTargetArn = %v; want EventsDLQ's Arn", rp["deadLetterTargetArn"])
	}
	const workerLease = 30
	if got, ok := prop(t, tpl, "EventsQueue", "VisibilityTimeout").(int); !ok || got != 60 || got <= workerLease {
		t.Errorf("events VisibilityTimeout = %v; want 60 (longer than the worker lease %ds)", got, workerLease)
	}
	for _, q := range tpl.ResourceNames("AWS::SQS::Queue") {
		if prop(t, tpl, q, "SqsManagedSseEnabled") != true && prop(t, tpl, q, "KmsMasterKeyId") == nil {
			t.Errorf("%s is not encrypted", q)
		}
	}
	if got := prop(t, tpl, "TelemetryStream", "StreamModeDetails", "StreamMode"); got != "ON_DEMAND" {
		t.Errorf("telemetry stream mode = %v; want ON_DEMAND", got)
	}
	if got := prop(t, tpl, "TelemetryStream", "StreamEncryption", "EncryptionType"); got != "KMS" {
		t.Errorf("telemetry encryption = %v; want KMS", got)
	}
}

// TestAlarms: every dead-letter queue alarms on its first message, every
// pipe alarms on failures, the worker on logged errors, all to the SNS
// topic.
func TestAlarms(t *testing.T) {
	tpl := stackTemplate(t)
	alarmed := func(metric string, dimensionTarget string, threshold int) bool {
		for _, a := range tpl.ResourceNames("AWS::CloudWatch::Alarm") {
			p := tpl.Resources[a].Properties
			if p["MetricName"] != metric || p["ComparisonOperator"] != "GreaterThanThreshold" || p["Threshold"] != threshold {
				continue
			}
			if !RefersTo(p["AlarmActions"], "AlarmTopic") {
				continue
			}
			if dimensionTarget == "" || RefersTo(p["Dimensions"], dimensionTarget) {
				return true
			}
		}
		return false
	}
	for _, q := range tpl.ResourceNames("AWS::SQS::Queue") {
		rp := asMap(tpl.Resources[q].Properties["RedrivePolicy"])
		for _, dlq := range tpl.ResourceNames("AWS::SQS::Queue") {
			if RefersTo(rp["deadLetterTargetArn"], dlq) && !alarmed("ApproximateNumberOfMessagesVisible", dlq, 0) {
				t.Errorf("dead-letter queue %s of %s has no alarm at threshold 0", dlq, q)
			}
		}
	}
	for _, p := range tpl.ResourceNames("AWS::Pipes::Pipe") {
		if !alarmed("ExecutionFailed", p, 0) {
			t.Errorf("pipe %s has no ExecutionFailed alarm", p)
		}
	}
	if !alarmed("WorkerErrors", "", 0) {
		t.Errorf("no worker errors alarm")
	}
	if !alarmed("Duration", "EventsPipe", 60000) {
		t.Errorf("no events pipe lag alarm")
	}
}
