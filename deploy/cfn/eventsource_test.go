package cfn

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/cloud/eventsource"
)

// specFromMapping reads a CloudFormation EventSourceMapping back into an
// eventsource.Spec (Name from the function's name).
func specFromMapping(t *testing.T, tpl *Template, name string) eventsource.Spec {
	t.Helper()
	p := tpl.Resources[name].Properties
	num := func(k string) int {
		v, ok := p[k].(int)
		if !ok {
			t.Errorf("mapping %s %s = %v (%T); want a number", name, k, p[k], p[k])
		}
		return v
	}
	spec := eventsource.Spec{
		BatchSize:                      num("BatchSize"),
		MaximumBatchingWindowInSeconds: num("MaximumBatchingWindowInSeconds"),
		ParallelizationFactor:          num("ParallelizationFactor"),
		MaximumRetryAttempts:           num("MaximumRetryAttempts"),
		MaximumRecordAgeInSeconds:      num("MaximumRecordAgeInSeconds"),
	}
	spec.StartingPosition, _ = p["StartingPosition"].(string)
	spec.BisectBatchOnFunctionError, _ = p["BisectBatchOnFunctionError"].(bool)
	types, _ := p["FunctionResponseTypes"].([]any)
	for _, v := range types {
		s, _ := v.(string)
		spec.FunctionResponseTypes = append(spec.FunctionResponseTypes, s)
	}
	fn := ""
	if _, arg, ok := intrinsicCall(p["FunctionName"]); ok {
		fn, _ = arg.(string)
	}
	if fn != "" {
		full, err := EvalString(tpl.Resources[fn].Properties["FunctionName"], stackEnv)
		if err != nil {
			t.Fatalf("function %s FunctionName: %v", fn, err)
		}
		spec.Name = strings.TrimPrefix(full, stackEnv["StackPrefix"]+"-bowline-")
	}
	return spec
}

// TestEventSourceMatchesSpec: each stream's Lambda event source mapping
// carries its cloud/eventsource spec, the settings the local stand-in runs
// with (`bowline consume` for telemetry, `bowline ingest` for events); it
// reads its stream, invokes its function and sends what it gives up on to
// its on-failure queue (standard, alarmed). It fails when the template or
// a Spec changes alone, or when either side has a mapping the other lacks.
func TestEventSourceMatchesSpec(t *testing.T) {
	tpl := stackTemplate(t)
	cases := map[string]struct {
		spec                  eventsource.Spec
		stream, function, dlq string
	}{
		"TelemetryConsumerMapping": {eventsource.TelemetryConsumer, "TelemetryStream", "ConsumerFunction", "TelemetryConsumerDLQ"},
		"EventsConsumerMapping":    {eventsource.EventsConsumer, "EventsStream", "IngestFunction", "EventsConsumerDLQ"},
	}
	names := tpl.ResourceNames("AWS::Lambda::EventSourceMapping")
	if len(names) != len(cases) {
		t.Fatalf("event source mappings %v; want exactly the telemetry and events consumers'", names)
	}
	for _, name := range names {
		c, ok := cases[name]
		if !ok {
			t.Errorf("event source mapping %s: no cloud/eventsource spec", name)
			continue
		}
		checkMapping(t, tpl, name, c.spec, c.stream, c.function, c.dlq)
	}
}

func checkMapping(t *testing.T, tpl *Template, name string, want eventsource.Spec, stream, function, dlqName string) {
	t.Helper()
	got := specFromMapping(t, tpl, name)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mapping %s = %+v;\nGo spec %+v", name, got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("mapping %s as a Spec: %v", name, err)
	}
	p := tpl.Resources[name].Properties
	if !isGetAtt(p["EventSourceArn"], stream, "Arn") {
		t.Errorf("mapping %s EventSourceArn = %v; want %s.Arn", name, p["EventSourceArn"], stream)
	}
	if !RefersTo(p["FunctionName"], function) {
		t.Errorf("mapping %s FunctionName = %v; want %s", name, p["FunctionName"], function)
	}
	dest := asMap(asMap(asMap(p["DestinationConfig"])["OnFailure"]))["Destination"]
	if !isGetAtt(dest, dlqName, "Arn") {
		t.Errorf("mapping %s OnFailure = %v; want %s.Arn", name, dest, dlqName)
	}
	if fifo := prop(t, tpl, dlqName, "FifoQueue"); fifo != nil && fifo != false {
		t.Errorf("%s FifoQueue = %v; a stream source's destination must be standard", dlqName, fifo)
	}
	alarmed := false
	for _, a := range tpl.ResourceNames("AWS::CloudWatch::Alarm") {
		dims, _ := tpl.Resources[a].Properties["Dimensions"].([]any)
		for _, d := range dims {
			alarmed = alarmed || isGetAtt(asMap(d)["Value"], dlqName, "QueueName")
		}
	}
	if !alarmed {
		t.Errorf("no alarm watches %s", dlqName)
	}
	fn := tpl.Resources[function].Properties
	for k, v := range map[string]any{"Runtime": "provided.al2023", "Handler": "bootstrap"} {
		if fn[k] != v {
			t.Errorf("%s %s = %v; want %v", function, k, fn[k], v)
		}
	}
	if arch, _ := fn["Architectures"].([]any); len(arch) != 1 || arch[0] != "arm64" {
		t.Errorf("%s Architectures = %v; want [arm64]", function, fn["Architectures"])
	}
	code := asMap(fn["Code"])
	if !RefersTo(code["S3Bucket"], "ConsumerCodeBucket") || !RefersTo(code["S3Key"], "ConsumerCodeKey") {
		t.Errorf("%s Code = %v; want the ConsumerCodeBucket and ConsumerCodeKey parameters", function, code)
	}
}
