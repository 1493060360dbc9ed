package cfn

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
)

// sqsDefaults are the values SQS gives a queue attribute that is not set
// (CreateQueue API reference); an attribute set on one side only is
// compared with its default on the other.
var sqsDefaults = map[string]string{
	"DelaySeconds":                  "0",
	"MessageRetentionPeriod":        "345600",
	"ReceiveMessageWaitTimeSeconds": "0",
	"VisibilityTimeout":             "30",
	"SqsManagedSseEnabled":          "true", // SSE-SQS is on for new queues
	"FifoQueue":                     "false",
}

// fifoDefaults are the defaults of the FIFO-only attributes.
var fifoDefaults = map[string]string{
	"ContentBasedDeduplication": "false",
	"DeduplicationScope":        "queue",
	"FifoThroughputLimit":       "perQueue",
}

// queueProps are the AWS::SQS::Queue properties that are not queue
// attributes.
var queueProps = map[string]bool{"QueueName": true, "Tags": true}

// templateQueue reads a queue's attributes from the template as SQS
// names them, RedrivePolicy as "<dlq name>/<maxReceiveCount>".
func templateQueue(t *testing.T, tpl *Template, logical string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range tpl.Resources[logical].Properties {
		if queueProps[k] {
			continue
		}
		if k == "RedrivePolicy" {
			rp := asMap(v)
			target := ""
			for _, q := range tpl.ResourceNames("AWS::SQS::Queue") {
				if isGetAtt(rp["deadLetterTargetArn"], q, "Arn") {
					target = evalName(t, tpl, q, "QueueName")
				}
			}
			out[k] = fmt.Sprintf("%s/%v", target, rp["maxReceiveCount"])
			continue
		}
		s, err := EvalString(v, stackEnv)
		if err != nil {
			t.Fatalf("%s.%s: %v", logical, k, err)
		}
		out[k] = s
	}
	return out
}

// planQueue is the same for a queue of the provisioning plan.
func planQueue(q provision.QueueSpec) map[string]string {
	out := maps.Clone(q.Attributes)
	if q.RedriveTo != "" {
		out["RedrivePolicy"] = fmt.Sprintf("%s/%d", q.RedriveTo, q.MaxReceiveCount)
	}
	return out
}

func evalName(t *testing.T, tpl *Template, logical, prop string) string {
	t.Helper()
	s, err := EvalString(tpl.Resources[logical].Properties[prop], stackEnv)
	if err != nil {
		t.Fatalf("%s.%s: %v", logical, prop, err)
	}
	return s
}

func stackPlan(t *testing.T) provision.Plan {
	t.Helper()
	n, err := resources.New(stackEnv["StackPrefix"])
	if err != nil {
		t.Fatal(err)
	}
	return provision.PlanFor(n, provision.Options{})
}

// TestProvisionMatchesTemplate: `bowline provision` (internal/provision)
// and the CloudFormation template create the same queues with the same
// value of every attribute (an attribute one side leaves unset is compared
// with SQS's default), and the same tables with the same key schema,
// attribute definitions, billing mode, stream view type and TTL attribute.
// Neither side has a table or queue the other lacks.
func TestProvisionMatchesTemplate(t *testing.T) {
	tpl := stackTemplate(t)
	plan := stackPlan(t)

	var cfnQueues, planQueues []string
	for _, logical := range tpl.ResourceNames("AWS::SQS::Queue") {
		name := evalName(t, tpl, logical, "QueueName")
		cfnQueues = append(cfnQueues, name)
		spec, ok := plan.Queue(name)
		if !ok {
			continue
		}
		got, want := planQueue(spec), templateQueue(t, tpl, logical)
		keys := map[string]bool{}
		for k := range got {
			keys[k] = true
		}
		for k := range want {
			keys[k] = true
		}
		fifo := want["FifoQueue"] == "true"
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			pv, pok := got[k]
			cv, cok := want[k]
			def, hasDef := sqsDefaults[k]
			if d, ok := fifoDefaults[k]; ok && fifo {
				def, hasDef = d, true
			}
			if !pok {
				pv = def
			}
			if !cok {
				cv = def
			}
			if (!pok || !cok) && !hasDef {
				t.Errorf("queue %s: %s is %q in provisioning, %q in the template, and has no default to compare with", name, k, got[k], want[k])
				continue
			}
			if pv != cv {
				t.Errorf("queue %s: %s = %q in provisioning; %q in the template (%s)", name, k, pv, cv, logical)
			}
		}
	}
	for _, q := range plan.Queues {
		planQueues = append(planQueues, q.Name)
	}
	slices.Sort(cfnQueues)
	slices.Sort(planQueues)
	if !reflect.DeepEqual(cfnQueues, planQueues) {
		t.Errorf("template queues %v; provisioned queues %v; want the same", cfnQueues, planQueues)
	}

	var cfnTables, planTables []string
	for _, logical := range tpl.ResourceNames("AWS::DynamoDB::Table") {
		name := evalName(t, tpl, logical, "TableName")
		cfnTables = append(cfnTables, name)
		spec, ok := plan.Table(name)
		if !ok {
			continue
		}
		keys := []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}}
		defs := []any{map[string]any{"AttributeName": "pk", "AttributeType": "S"}}
		if spec.SortKey {
			keys = append(keys, map[string]any{"AttributeName": "sk", "KeyType": "RANGE"})
			defs = append(defs, map[string]any{"AttributeName": "sk", "AttributeType": "S"})
		}
		var gsis []any
		for _, ix := range spec.Indexes {
			defs = append(defs, map[string]any{"AttributeName": ix.HashKey, "AttributeType": "S"})
			gsis = append(gsis, map[string]any{
				"IndexName":  ix.Name,
				"KeySchema":  []any{map[string]any{"AttributeName": ix.HashKey, "KeyType": "HASH"}},
				"Projection": map[string]any{"ProjectionType": "KEYS_ONLY"},
			})
		}
		p := tpl.Resources[logical].Properties
		if got, _ := p["GlobalSecondaryIndexes"].([]any); !reflect.DeepEqual(got, gsis) {
			t.Errorf("table %s: template GlobalSecondaryIndexes %v; provisioning %v", name, got, gsis)
		}
		if !reflect.DeepEqual(p["KeySchema"], keys) {
			t.Errorf("table %s: template KeySchema %v; provisioning %v", name, p["KeySchema"], keys)
		}
		if !reflect.DeepEqual(p["AttributeDefinitions"], defs) {
			t.Errorf("table %s: template AttributeDefinitions %v; provisioning %v", name, p["AttributeDefinitions"], defs)
		}
		if p["BillingMode"] != "PAY_PER_REQUEST" {
			t.Errorf("table %s: template BillingMode %v; provisioning PAY_PER_REQUEST", name, p["BillingMode"])
		}
		stream, _ := asMap(p["StreamSpecification"])["StreamViewType"].(string)
		if stream != spec.StreamView {
			t.Errorf("table %s: template stream view %q; provisioning %q", name, stream, spec.StreamView)
		}
		ttl := asMap(p["TimeToLiveSpecification"])
		ttlAttr, _ := ttl["AttributeName"].(string)
		if ttl["Enabled"] != true {
			ttlAttr = ""
		}
		if ttlAttr != spec.TTLAttribute {
			t.Errorf("table %s: template TTL attribute %q; provisioning %q", name, ttlAttr, spec.TTLAttribute)
		}
	}
	for _, tb := range plan.Tables {
		planTables = append(planTables, tb.Name)
	}
	slices.Sort(cfnTables)
	slices.Sort(planTables)
	if !reflect.DeepEqual(cfnTables, planTables) {
		t.Errorf("template tables %v; provisioned tables %v; want the same", cfnTables, planTables)
	}
}

// TestInboxTTLOutlivesEveryQueue is the inbox TTL rule (docs/tables.md):
// a completed inbox row must outlive the longest an event can still be
// redriven after it was written, the events queue's retention plus the
// DLQ's (a FIFO message's retention starts again in the DLQ) plus the
// redrive window, as provisioning and the template set those retentions.
func TestInboxTTLOutlivesEveryQueue(t *testing.T) {
	tpl := stackTemplate(t)
	plan := stackPlan(t)
	n, _ := resources.New(stackEnv["StackPrefix"])
	seconds := func(src, v string) time.Duration {
		s, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s retention %q: %v", src, v, err)
		}
		return time.Duration(s) * time.Second
	}
	retention := func(m map[string]string) string {
		if v, ok := m["MessageRetentionPeriod"]; ok {
			return v
		}
		return sqsDefaults["MessageRetentionPeriod"]
	}
	q, _ := plan.Queue(n.EventsQueue())
	dlq, _ := plan.Queue(n.EventsDLQ())
	for _, src := range []struct {
		name       string
		queue, dlq time.Duration
	}{
		{"provisioning", seconds("provisioning", retention(q.Attributes)), seconds("provisioning", retention(dlq.Attributes))},
		{"template", seconds("template", retention(templateQueue(t, tpl, "EventsQueue"))), seconds("template", retention(templateQueue(t, tpl, "EventsDLQ")))},
	} {
		if src.queue > inbox.MaxQueueRetention || src.dlq > inbox.MaxQueueRetention {
			t.Errorf("%s: retention events %v, DLQ %v; inbox.MaxQueueRetention %v is the most the rule allows for", src.name, src.queue, src.dlq, inbox.MaxQueueRetention)
		}
		if need := src.queue + src.dlq + inbox.RedriveWindow; inbox.DefaultTTL < need {
			t.Errorf("%s: inbox TTL %v < events retention %v + DLQ retention %v + redrive window %v = %v",
				src.name, inbox.DefaultTTL, src.queue, src.dlq, inbox.RedriveWindow, need)
		}
	}
}

// TestHeadsIndexIsTheEngines: the index both provisioning and the template
// put on the events table is the one the engine scans and Emit keys.
func TestHeadsIndexIsTheEngines(t *testing.T) {
	n, err := resources.New(stackEnv["StackPrefix"])
	if err != nil {
		t.Fatal(err)
	}
	spec, ok := stackPlan(t).Table(n.EventsTable())
	want := []provision.IndexSpec{{Name: engine.HeadsIndex, HashKey: engine.AttrHeadTenant}}
	if !ok || !reflect.DeepEqual(spec.Indexes, want) {
		t.Errorf("events table indexes = %+v; want %+v (engine.HeadsIndex on engine.AttrHeadTenant)", spec.Indexes, want)
	}
}
