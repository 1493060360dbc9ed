package cfn

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/relay"
)

// relayPipes are the pipe definitions `bowline relay` runs, with the table
// whose stream feeds each and the queue it targets.
var relayPipes = []struct {
	spec          relay.PipeSpec
	source, queue string
}{
	{relay.EventsPipe, "EventsTable", "EventsQueue"},
	{relay.RecordChangesPipe, "AppTable", "RecordChangesQueue"},
}

// specFromTemplate reads a CloudFormation pipe back into a relay.PipeSpec.
func specFromTemplate(t *testing.T, name string, p map[string]any) relay.PipeSpec {
	t.Helper()
	full, err := EvalString(p["Name"], stackEnv)
	if err != nil {
		t.Fatalf("pipe %s Name: %v", name, err)
	}
	spec := relay.PipeSpec{Name: strings.TrimPrefix(full, stackEnv["StackPrefix"]+"-bowline-"), BodyPath: "$"}
	filters, _ := asMap(asMap(p["SourceParameters"])["FilterCriteria"])["Filters"].([]any)
	switch len(filters) {
	case 0:
	case 1:
		spec.Filter, _ = asMap(filters[0])["Pattern"].(string)
	default:
		t.Fatalf("pipe %s has %d filters; the relay evaluates one pattern", name, len(filters))
	}
	tp := asMap(p["TargetParameters"])
	if tmpl, ok := tp["InputTemplate"].(string); ok {
		body, ok := strings.CutPrefix(tmpl, "<")
		body, ok2 := strings.CutSuffix(body, ">")
		if !ok || !ok2 {
			t.Fatalf("pipe %s InputTemplate %q; the relay supports only <path>", name, tmpl)
		}
		spec.BodyPath = body
	}
	sqs := asMap(tp["SqsQueueParameters"])
	spec.GroupIDPath, _ = sqs["MessageGroupId"].(string)
	spec.DedupIDPath, _ = sqs["MessageDeduplicationId"].(string)
	return spec
}

// sameJSON compares two JSON texts as values.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	if a == "" || b == "" {
		return a == b
	}
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("filter %q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("filter %q: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestPipesMatchRelay: the CloudFormation Pipes and `bowline relay` use the
// same filter, body, group and dedup paths, read the same table's stream and
// target the same queue, and neither side has a pipe the other lacks. It
// fails when either the template or engine/relay changes alone.
func TestPipesMatchRelay(t *testing.T) {
	tpl := stackTemplate(t)
	var cfnNames, relayNames []string
	for _, name := range tpl.ResourceNames("AWS::Pipes::Pipe") {
		got := specFromTemplate(t, name, tpl.Resources[name].Properties)
		cfnNames = append(cfnNames, got.Name)
		if err := got.Validate(); err != nil {
			t.Errorf("pipe %s as a relay spec: %v", name, err)
		}
	}
	for _, rp := range relayPipes {
		relayNames = append(relayNames, rp.spec.Name)
	}
	sort.Strings(cfnNames)
	sort.Strings(relayNames)
	if !reflect.DeepEqual(cfnNames, relayNames) {
		t.Fatalf("CloudFormation pipes %v; relay pipes %v; want the same set", cfnNames, relayNames)
	}
	for _, rp := range relayPipes {
		want := rp.spec
		var name string
		for _, n := range tpl.ResourceNames("AWS::Pipes::Pipe") {
			if specFromTemplate(t, n, tpl.Resources[n].Properties).Name == want.Name {
				name = n
			}
		}
		p := tpl.Resources[name].Properties
		got := specFromTemplate(t, name, p)
		if !sameJSON(t, got.Filter, want.Filter) {
			t.Errorf("pipe %s filter = %s; relay %s", name, got.Filter, want.Filter)
		}
		if got.BodyPath != want.BodyPath {
			t.Errorf("pipe %s body = %q; relay %q", name, got.BodyPath, want.BodyPath)
		}
		if tmpl, _ := asMap(p["TargetParameters"])["InputTemplate"].(string); tmpl != want.InputTemplate() {
			t.Errorf("pipe %s InputTemplate = %q; relay %q", name, tmpl, want.InputTemplate())
		}
		if got.GroupIDPath != want.GroupIDPath || got.DedupIDPath != want.DedupIDPath {
			t.Errorf("pipe %s group, dedup = %q, %q; relay %q, %q", name, got.GroupIDPath, got.DedupIDPath, want.GroupIDPath, want.DedupIDPath)
		}
		if !isGetAtt(p["Source"], rp.source, "StreamArn") {
			t.Errorf("pipe %s Source = %v; want %s.StreamArn", name, p["Source"], rp.source)
		}
		if !isGetAtt(p["Target"], rp.queue, "Arn") {
			t.Errorf("pipe %s Target = %v; want %s.Arn", name, p["Target"], rp.queue)
		}
		fifo := prop(t, tpl, rp.queue, "FifoQueue") == true
		if fifo != want.FIFO() {
			t.Errorf("pipe %s targets %s (FIFO %v); relay spec FIFO %v", name, rp.queue, fifo, want.FIFO())
		}
		lc := asMap(p["LogConfiguration"])
		if lc["Level"] != "ERROR" || !RefersTo(lc["CloudwatchLogsLogDestination"], "PipeLogGroup") {
			t.Errorf("pipe %s LogConfiguration = %v; want ERROR to PipeLogGroup", name, lc)
		}
	}
}

// TestPipesFailLikeRelay: every Pipe fails the way `bowline relay` does
// (relay.Failure): the same bounded retries and record age, bisecting
// batches, and a dead-letter queue, so a record SQS refuses is dead-lettered
// (and alarmed) instead of stalling its shard until the stream trims it
// 24 h later. A stream source's dead-letter target must be a standard queue
// (PipeSourceDynamoDBStreamParameters, DeadLetterConfig).
func TestPipesFailLikeRelay(t *testing.T) {
	tpl := stackTemplate(t)
	want := relay.Failure
	for _, name := range tpl.ResourceNames("AWS::Pipes::Pipe") {
		ds := asMap(asMap(tpl.Resources[name].Properties["SourceParameters"])["DynamoDBStreamParameters"])
		if ds["MaximumRetryAttempts"] != want.MaxRetryAttempts {
			t.Errorf("pipe %s MaximumRetryAttempts = %v; relay %d", name, ds["MaximumRetryAttempts"], want.MaxRetryAttempts)
		}
		if ds["MaximumRecordAgeInSeconds"] != int(want.MaxRecordAge.Seconds()) {
			t.Errorf("pipe %s MaximumRecordAgeInSeconds = %v; relay %d", name, ds["MaximumRecordAgeInSeconds"], int(want.MaxRecordAge.Seconds()))
		}
		if ds["OnPartialBatchItemFailure"] != want.OnPartialBatchItemFailure {
			t.Errorf("pipe %s OnPartialBatchItemFailure = %v; want %s", name, ds["OnPartialBatchItemFailure"], want.OnPartialBatchItemFailure)
		}
		dlq := asMap(ds["DeadLetterConfig"])["Arn"]
		if !isGetAtt(dlq, "PipesDLQ", "Arn") {
			t.Errorf("pipe %s DeadLetterConfig.Arn = %v; want PipesDLQ.Arn", name, dlq)
			continue
		}
		if fifo := prop(t, tpl, "PipesDLQ", "FifoQueue"); fifo != nil && fifo != false {
			t.Errorf("PipesDLQ FifoQueue = %v; a stream source's dead-letter queue must be standard", fifo)
		}
	}
	if want.MaxRetryAttempts < 0 || want.MaxRecordAge <= 0 {
		t.Errorf("relay.Failure = %+v; want bounded retries and age (a Pipe with -1 stalls its shard for 24 h)", want)
	}
	alarmed := false
	for _, a := range tpl.ResourceNames("AWS::CloudWatch::Alarm") {
		dims, _ := tpl.Resources[a].Properties["Dimensions"].([]any)
		for _, d := range dims {
			if isGetAtt(asMap(d)["Value"], "PipesDLQ", "QueueName") {
				alarmed = true
			}
		}
	}
	if !alarmed {
		t.Error("no alarm watches PipesDLQ")
	}
}

// TestPipeFilterOnSampleRecords runs the template's events filter through
// the relay's own filter engine: event-row INSERTs pass, heads, dedup rows
// and MODIFYs do not.
func TestPipeFilterOnSampleRecords(t *testing.T) {
	tpl := stackTemplate(t)
	got := specFromTemplate(t, "EventsPipe", tpl.Resources["EventsPipe"].Properties)
	p, err := relay.Compile(got)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(name, pk string) map[string]any {
		return map[string]any{"eventName": name, "dynamodb": map[string]any{"NewImage": map[string]any{
			"pk": map[string]any{"S": pk}, "tenant": map[string]any{"S": "t1"}, "id": map[string]any{"S": "01J"},
		}}}
	}
	for _, tc := range []struct {
		name, pk string
		want     bool
	}{
		{"INSERT", engine.EventPK("t1"), true},
		{"INSERT", engine.HeadPK("t1"), false},
		{"MODIFY", engine.EventPK("t1"), false},
		{"INSERT", engine.DedupPK("t1", "k"), false},
	} {
		msg, ok, err := p.Transform(rec(tc.name, tc.pk))
		if err != nil || ok != tc.want {
			t.Errorf("%s %s: passed %v (%v); want %v", tc.name, tc.pk, ok, err, tc.want)
		}
		if ok && (msg.GroupID != "t1" || msg.DedupID != "01J") {
			t.Errorf("%s %s: group %q dedup %q; want t1, 01J", tc.name, tc.pk, msg.GroupID, msg.DedupID)
		}
	}
}

func isGetAtt(v any, res, attr string) bool {
	fn, arg, ok := intrinsicCall(v)
	return ok && fn == "Fn::GetAtt" && reflect.DeepEqual(arg, []any{res, attr})
}
