package cfn

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/relay"
)

type relayPipe struct {
	spec          relay.PipeSpec
	source, queue string
}

// relayPipes are the pipe definitions `bowline relay` runs (the catalog's,
// cloud/catalog.Pipes), with the table whose stream feeds each and the
// queue it targets.
func relayPipes(t *testing.T) []relayPipe {
	t.Helper()
	events, recordChanges, err := catalog.Pipes(catalog.Bowline())
	if err != nil {
		t.Fatal(err)
	}
	return []relayPipe{
		{events, "EventsTable", "EventsQueue"},
		{recordChanges, "AppTable", "RecordChangesQueue"},
	}
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
	for _, f := range filters {
		pat, ok := asMap(f)["Pattern"].(string)
		if !ok {
			t.Fatalf("pipe %s filter %v: want a literal Pattern string", name, f)
		}
		spec.Filters = append(spec.Filters, pat)
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

// sameFilters compares two lists of JSON patterns as values, in order.
func sameFilters(t *testing.T, a, b []string) bool {
	t.Helper()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		var va, vb any
		if err := json.Unmarshal([]byte(a[i]), &va); err != nil {
			t.Fatalf("filter %q: %v", a[i], err)
		}
		if err := json.Unmarshal([]byte(b[i]), &vb); err != nil {
			t.Fatalf("filter %q: %v", b[i], err)
		}
		if !reflect.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}

// pasteFilters is the FilterCriteria block to paste into the template for
// spec's filters.
func pasteFilters(spec relay.PipeSpec) string {
	var b strings.Builder
	b.WriteString("        FilterCriteria:\n          Filters:\n")
	for _, f := range spec.Filters {
		fmt.Fprintf(&b, "            - Pattern: '%s'\n", f)
	}
	return b.String()
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
	pipes := relayPipes(t)
	for _, rp := range pipes {
		relayNames = append(relayNames, rp.spec.Name)
	}
	sort.Strings(cfnNames)
	sort.Strings(relayNames)
	if !reflect.DeepEqual(cfnNames, relayNames) {
		t.Fatalf("CloudFormation pipes %v; relay pipes %v; want the same set", cfnNames, relayNames)
	}
	for _, rp := range pipes {
		want := rp.spec
		var name string
		for _, n := range tpl.ResourceNames("AWS::Pipes::Pipe") {
			if specFromTemplate(t, n, tpl.Resources[n].Properties).Name == want.Name {
				name = n
			}
		}
		p := tpl.Resources[name].Properties
		got := specFromTemplate(t, name, p)
		if !sameFilters(t, got.Filters, want.Filters) {
			t.Errorf("pipe %s filters = %q; the catalog's (cloud/catalog.Pipes) are %q.\n"+
				"A subscription or type changed in cloud/catalog: replace %s's FilterCriteria in deploy/cloudformation/bowline.yaml with\n%s",
				name, got.Filters, want.Filters, name, pasteFilters(want))
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

// TestPipeFilterOnSampleRecords runs the template's filters through the
// relay's own filter engine: event-row INSERTs of a subscribed type pass;
// heads, dedup rows, MODIFYs and types nobody subscribes to do not; on the
// app table, contact rows pass and ingest's seq and lease rows do not.
func TestPipeFilterOnSampleRecords(t *testing.T) {
	tpl := stackTemplate(t)
	got := specFromTemplate(t, "EventsPipe", tpl.Resources["EventsPipe"].Properties)
	p, err := relay.Compile(got)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(name, pk, typ string) map[string]any {
		return map[string]any{"eventName": name, "dynamodb": map[string]any{"Keys": map[string]any{"pk": map[string]any{"S": pk}}, "NewImage": map[string]any{
			"pk": map[string]any{"S": pk}, "tenant": map[string]any{"S": "t1"}, "id": map[string]any{"S": "01J"}, "type": map[string]any{"S": typ},
		}}}
	}
	for _, tc := range []struct {
		name, pk, typ string
		want          bool
	}{
		{"INSERT", engine.EventPK("t1"), catalog.TypeMealFinished, true},
		{"INSERT", engine.EventPK("t1"), catalog.TypeRefilled, false},
		{"INSERT", engine.HeadPK("t1"), catalog.TypeMealFinished, false},
		{"MODIFY", engine.EventPK("t1"), catalog.TypeMealFinished, false},
		{"INSERT", engine.DedupPK("t1", "k"), catalog.TypeMealFinished, false},
		// Rows keyed like an event row but not one (issue 22).
		{"INSERT", "X#EVENT", catalog.TypeMealFinished, false},
		{"INSERT", "tenant#t1#EVENT", catalog.TypeMealFinished, false},
		{"INSERT", "EMIT#t1#EVENT", catalog.TypeMealFinished, false},
	} {
		msg, ok, err := p.Transform(rec(tc.name, tc.pk, tc.typ))
		if err != nil || ok != tc.want {
			t.Errorf("%s %s %s: passed %v (%v); want %v", tc.name, tc.pk, tc.typ, ok, err, tc.want)
		}
		if ok && (msg.GroupID != "t1" || msg.DedupID != "01J") {
			t.Errorf("%s %s: group %q dedup %q; want t1, 01J", tc.name, tc.pk, msg.GroupID, msg.DedupID)
		}
	}

	rc, err := relay.Compile(specFromTemplate(t, "RecordChangesPipe", tpl.Resources["RecordChangesPipe"].Properties))
	if err != nil {
		t.Fatal(err)
	}
	row := func(pk, entity string) map[string]any {
		img := map[string]any{"pk": map[string]any{"S": pk}, "entity": map[string]any{"S": entity}}
		return map[string]any{"eventName": "MODIFY", "dynamodb": map[string]any{
			"Keys": map[string]any{"pk": map[string]any{"S": pk}}, "NewImage": img, "OldImage": img,
		}}
	}
	for _, tc := range []struct {
		pk, entity string
		want       bool
	}{
		{"CONTACT#t1", "contact", true},
		{"SEQ#bowl-1", "ingest_seq", false},
		{"LEASE#ingest#g1", "ingest_lease", false},
	} {
		if _, ok, err := rc.Transform(row(tc.pk, tc.entity)); err != nil || ok != tc.want {
			t.Errorf("app row %s (%s): passed %v (%v); want %v", tc.pk, tc.entity, ok, err, tc.want)
		}
	}
}

// TestEventsPipeFilterFitsManyTypes: a Pipe pattern holds at most 4,096
// characters (relay.MaxPatternLen, the Pipes API's Filter), and the events
// filter lists every subscribed type. Today's list is far inside it; the
// test says how many more types of 32 characters would still fit.
func TestEventsPipeFilterFitsManyTypes(t *testing.T) {
	events := relayPipes(t)[0].spec
	n := len(events.Filters[0])
	types := catalog.Bowline().SubscribedTypes(engine.Durable)
	more := (relay.MaxPatternLen - n) / len(`,"`+strings.Repeat("x", 32)+`"`)
	t.Logf("events filter: %d subscribed types in %d of %d characters; room for %d more types of 32 characters", len(types), n, relay.MaxPatternLen, more)
	if more < 50 {
		t.Errorf("events filter is %d characters; room for only %d more types: move to prefixes of type families before it overflows", n, more)
	}
}

// streamRecord is one stream record as the Pipe model sees it: its
// partition key (the table's, which for event rows is the tenant's), and
// the group and deduplication id its message gets.
type streamRecord struct{ key, group, id string }

// pipeModel delivers one shard's records to q the way an EventBridge Pipe
// with a DynamoDB stream source and an SQS target does, by the rules its
// documentation gives (docs/relay.md, "The events Pipe"):
//
//   - the shard's records are split over parallel concurrent batchers by
//     partition key, each key's records to one batcher, in stream order
//     (ParallelizationFactor);
//   - a batcher takes up to batchSize records at a time and sends them in
//     one SendMessageBatch (Pipes use the target's batch API even for a
//     batch of one);
//   - when only part of a batch succeeds, the Pipe retries the rest
//     (partial batch failure) before the batcher takes its next batch.
func pipeModel(t *testing.T, q *enginetest.FIFO, batchSize, parallel int, records []streamRecord) {
	t.Helper()
	lanes := make([][]streamRecord, parallel)
	for _, r := range records {
		h := fnv.New32a()
		h.Write([]byte(r.key))
		i := int(h.Sum32() % uint32(parallel))
		lanes[i] = append(lanes[i], r)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, lane := range lanes {
		wg.Go(func() {
			for start := 0; start < len(lane); start += batchSize {
				pending := lane[start:min(start+batchSize, len(lane))]
				for len(pending) > 0 && ctx.Err() == nil {
					in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL)}
					for i, r := range pending {
						in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{
							Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(`{"id":"` + r.id + `"}`),
							MessageGroupId: aws.String(r.group), MessageDeduplicationId: aws.String(r.id),
						})
					}
					out, err := q.SendMessageBatch(ctx, in)
					if err != nil {
						continue // the whole call failed: the batch again
					}
					var failed []streamRecord
					for _, f := range out.Failed {
						i, _ := strconv.Atoi(aws.ToString(f.Id))
						failed = append(failed, pending[i])
					}
					pending = failed
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("pipe model did not deliver every record")
	}
}

// pipeBatchLatency is an assumption, not a documented figure: the time one
// Pipe batch takes from the shard to SQS's answer, used to state the rate
// the source settings allow.
const pipeBatchLatency = 40 * time.Millisecond

// TestEventsPipeKeepsTenantOrder drives a model of the events Pipe, with
// the template's BatchSize and ParallelizationFactor, through the
// partial-failure scenario of engine/relay's
// TestPartialBatchFailureKeepsGroupOrder: two tenants' records interleaved
// on one shard, SQS refusing a2 twice while accepting the rest. Each
// tenant's messages must reach the queue in stream order, as they do from
// the relay. With ten records per batch, a2 landed behind a3..a5. The
// template's settings are engine/relay.EventsSource, whose rate is logged.
func TestEventsPipeKeepsTenantOrder(t *testing.T) {
	tpl := stackTemplate(t)
	ds := asMap(prop(t, tpl, "EventsPipe", "SourceParameters", "DynamoDBStreamParameters"))
	batch, _ := ds["BatchSize"].(int)
	parallel, ok := ds["ParallelizationFactor"].(int)
	if !ok {
		parallel = 1 // the Pipe's default
	}
	if batch < 1 || batch > 10 || parallel < 1 || parallel > 10 {
		t.Fatalf("EventsPipe BatchSize %v, ParallelizationFactor %v; want 1-10 each", ds["BatchSize"], ds["ParallelizationFactor"])
	}
	want := relay.EventsSource
	if batch != want.BatchSize || parallel != want.ParallelizationFactor {
		t.Errorf("EventsPipe BatchSize, ParallelizationFactor = %d, %d; relay.EventsSource %d, %d", batch, parallel, want.BatchSize, want.ParallelizationFactor)
	}

	q := enginetest.NewFIFO(enginetest.FIFOConfig{})
	q.InjectSendFailure("a2", 2)
	var records []streamRecord
	for _, id := range []string{"a1", "b1", "a2", "b2", "a3", "b3", "a4", "a5"} {
		tenant := "tenant-" + id[:1]
		records = append(records, streamRecord{key: engine.EventPK(tenant), group: tenant, id: id})
	}
	pipeModel(t, q, batch, parallel, records)
	order := func(group string) string {
		var ids []string
		for _, m := range q.Messages(q.URL) {
			if m.Group == group {
				ids = append(ids, m.DedupID)
			}
		}
		return strings.Join(ids, ",")
	}
	if got, want := order("tenant-a"), "a1,a2,a3,a4,a5"; got != want {
		t.Errorf("tenant-a order in the queue = %s; want %s (BatchSize %d: a Pipe retries only the failed entries of a batch)", got, want, batch)
	}
	if got, want := order("tenant-b"), "b1,b2,b3"; got != want {
		t.Errorf("tenant-b order in the queue = %s; want %s", got, want)
	}

	perShard := float64(batch*parallel) / pipeBatchLatency.Seconds()
	t.Logf("events Pipe: %d record(s) per batch, %d batches at once per shard: %.0f records/s per shard at an assumed %v per batch (BatchSize 10 without parallelization: %.0f)",
		batch, parallel, perShard, pipeBatchLatency, 10/pipeBatchLatency.Seconds())
	if perShard < 10/pipeBatchLatency.Seconds() {
		t.Errorf("events Pipe allows %.0f records/s per shard; want at least the %.0f of ten records per batch", perShard, 10/pipeBatchLatency.Seconds())
	}
}

func isGetAtt(v any, res, attr string) bool {
	fn, arg, ok := intrinsicCall(v)
	return ok && fn == "Fn::GetAtt" && reflect.DeepEqual(arg, []any{res, attr})
}
