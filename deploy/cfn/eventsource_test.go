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

// TestEventSourceMatchesSpec: the telemetry stream's Lambda event source
// mapping carries cloud/eventsource.TelemetryConsumer, the settings
// `bowline consume` runs its stand-in with; it reads the telemetry stream,
// invokes the consumer function and sends what it gives up on to
// TelemetryConsumerDLQ (standard, alarmed). It fails when the template or
// the Spec changes alone.
func TestEventSourceMatchesSpec(t *testing.T) {
	tpl := stackTemplate(t)
	names := tpl.ResourceNames("AWS::Lambda::EventSourceMapping")
	if len(names) != 1 {
		t.Fatalf("event source mappings %v; want exactly the telemetry consumer's", names)
	}
	name := names[0]
	got, want := specFromMapping(t, tpl, name), eventsource.TelemetryConsumer
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mapping %s = %+v;\nGo spec %+v", name, got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("mapping %s as a Spec: %v", name, err)
	}
	p := tpl.Resources[name].Properties
	if !isGetAtt(p["EventSourceArn"], "TelemetryStream", "Arn") {
		t.Errorf("mapping %s EventSourceArn = %v; want TelemetryStream.Arn", name, p["EventSourceArn"])
	}
	if !RefersTo(p["FunctionName"], "ConsumerFunction") {
		t.Errorf("mapping %s FunctionName = %v; want ConsumerFunction", name, p["FunctionName"])
	}
	dest := asMap(asMap(asMap(p["DestinationConfig"])["OnFailure"]))["Destination"]
	if !isGetAtt(dest, "TelemetryConsumerDLQ", "Arn") {
		t.Errorf("mapping %s OnFailure = %v; want TelemetryConsumerDLQ.Arn", name, dest)
	}
	if fifo := prop(t, tpl, "TelemetryConsumerDLQ", "FifoQueue"); fifo != nil && fifo != false {
		t.Errorf("TelemetryConsumerDLQ FifoQueue = %v; a stream source's destination must be standard", fifo)
	}
	alarmed := false
	for _, a := range tpl.ResourceNames("AWS::CloudWatch::Alarm") {
		dims, _ := tpl.Resources[a].Properties["Dimensions"].([]any)
		for _, d := range dims {
			alarmed = alarmed || isGetAtt(asMap(d)["Value"], "TelemetryConsumerDLQ", "QueueName")
		}
	}
	if !alarmed {
		t.Error("no alarm watches TelemetryConsumerDLQ")
	}
	fn := tpl.Resources["ConsumerFunction"].Properties
	for k, v := range map[string]any{"Runtime": "provided.al2023", "Handler": "bootstrap"} {
		if fn[k] != v {
			t.Errorf("ConsumerFunction %s = %v; want %v", k, fn[k], v)
		}
	}
	if arch, _ := fn["Architectures"].([]any); len(arch) != 1 || arch[0] != "arm64" {
		t.Errorf("ConsumerFunction Architectures = %v; want [arm64]", fn["Architectures"])
	}
	code := asMap(fn["Code"])
	if !RefersTo(code["S3Bucket"], "ConsumerCodeBucket") || !RefersTo(code["S3Key"], "ConsumerCodeKey") {
		t.Errorf("ConsumerFunction Code = %v; want the ConsumerCodeBucket and ConsumerCodeKey parameters", code)
	}
}
