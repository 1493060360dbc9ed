package cfn

import (
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/internal/resources"
)

// stackEnv evaluates the template for stack prefix "prod" in a sample
// account and region. A Ref of a topic rule is its name (TestRulesMatchSpec
// checks these against the rules' RuleName).
var stackEnv = Env{
	"StackPrefix": "prod", "AWS::Partition": "aws", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012",
	"TelemetryTopicRule": "bowline_prod_telemetry", "TelemetryV1TopicRule": "bowline_prod_telemetry_v1",
	"EventsTopicRule": "bowline_prod_events",
}

// TestResourceNamesFollowResources: the tables, queues and stream are named
// exactly as internal/resources names them, and every other named resource
// follows the same "<prefix>-bowline-<base>" rule.
func TestResourceNamesFollowResources(t *testing.T) {
	tpl := stackTemplate(t)
	n, err := resources.New(stackEnv["StackPrefix"])
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ logical, prop, want string }{
		{"EventsTable", "TableName", n.EventsTable()},
		{"InboxTable", "TableName", n.InboxTable()},
		{"DeadLettersTable", "TableName", n.DeadLettersTable()},
		{"AppTable", "TableName", n.AppTable()},
		{"EventsQueue", "QueueName", n.EventsQueue()},
		{"EventsDLQ", "QueueName", n.EventsDLQ()},
		{"RecordChangesQueue", "QueueName", n.RecordChangesQueue()},
		{"PipesDLQ", "QueueName", n.PipesDLQ()},
		{"RuleErrorsQueue", "QueueName", n.RuleErrorsQueue()},
		{"TelemetryStateTable", "TableName", n.TelemetryTable()},
		{"TelemetryConsumerDLQ", "QueueName", n.TelemetryConsumerDLQ()},
		{"TelemetryStream", "Name", n.TelemetryStream()},
		{"EventsStream", "Name", n.EventsStream()},
		{"EventsConsumerDLQ", "QueueName", n.EventsConsumerDLQ()},
	} {
		r, ok := tpl.Resources[tc.logical]
		if !ok {
			t.Errorf("resource %s missing", tc.logical)
			continue
		}
		got, err := EvalString(r.Properties[tc.prop], stackEnv)
		if err != nil || got != tc.want {
			t.Errorf("%s.%s = %q (%v); want %q", tc.logical, tc.prop, got, err, tc.want)
		}
	}
	// Every other name property of a resource follows the rule too.
	nameProps := []string{"TableName", "QueueName", "Name", "TopicName", "RoleName", "ManagedPolicyName",
		"PolicyName", "ThingTypeName", "ClusterName", "ServiceName", "Family", "AlarmName"}
	prefix := stackEnv["StackPrefix"] + "-bowline"
	for _, name := range tpl.ResourceNames("") {
		r := tpl.Resources[name]
		for _, p := range nameProps {
			v, ok := r.Properties[p]
			if !ok || (p == "PolicyName" && r.Type != "AWS::IoT::Policy" && r.Type != "AWS::ApplicationAutoScaling::ScalingPolicy") {
				continue
			}
			got, err := EvalString(v, stackEnv)
			if err != nil {
				t.Errorf("%s.%s: %v", name, p, err)
				continue
			}
			if got != prefix && !strings.HasPrefix(got, prefix+"-") {
				t.Errorf("%s.%s = %q; want %q or %q-<base>", name, p, got, prefix, prefix)
			}
		}
	}
}
