package cfn

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/resources"
)

// ruleFromTemplate reads a CloudFormation topic rule back into a
// rules.Spec, failing on anything the stand-in would not run alike: more
// than one action, an action other than Kinesis with TelemetryRuleRole, another SQL version, an error action other than SQS
// to RuleErrorsQueue with the raw JSON body, a RuleDisabled other than
// false or !If [<parameter> = "true", false, true].
func ruleFromTemplate(t *testing.T, tpl *Template, logical string, env Env) rules.Spec {
	t.Helper()
	p := tpl.Resources[logical].Properties
	name, err := EvalString(p["RuleName"], env)
	if err != nil {
		t.Fatalf("rule %s RuleName: %v", logical, err)
	}
	prefix := wire.RuleName(env["StackPrefix"], "")
	base, ok := strings.CutPrefix(name, prefix)
	if !ok {
		t.Fatalf("rule %s RuleName = %q; want %s<base> (wire.RuleName)", logical, name, prefix)
	}
	payload := asMap(p["TopicRulePayload"])
	if v := payload["AwsIotSqlVersion"]; v != rules.SQLVersion {
		t.Errorf("rule %s AwsIotSqlVersion = %v; want %s", logical, v, rules.SQLVersion)
	}
	sql, _ := payload["Sql"].(string)
	from, items, err := rules.ParseSQL(sql)
	if err != nil {
		t.Fatalf("rule %s: %v", logical, err)
	}
	spec := rules.Spec{Base: base, From: from, Select: items}
	actions, _ := payload["Actions"].([]any)
	if len(actions) != 1 || len(asMap(actions[0])) != 1 || asMap(actions[0])["Kinesis"] == nil {
		t.Fatalf("rule %s Actions = %v; want one Kinesis action, as the stand-in runs", logical, actions)
	}
	kin := asMap(asMap(actions[0])["Kinesis"])
	if spec.PartitionKey, err = rules.ParseTemplate(asString(kin["PartitionKey"])); err != nil {
		t.Errorf("rule %s PartitionKey: %v", logical, err)
	}
	if !isGetAtt(kin["RoleArn"], "TelemetryRuleRole", "Arn") {
		t.Errorf("rule %s Kinesis action = %v; want RoleArn TelemetryRuleRole.Arn", logical, kin)
	}
	ea := asMap(payload["ErrorAction"])
	sqs := asMap(ea["Sqs"])
	if len(ea) != 1 || !isRef(sqs["QueueUrl"], "RuleErrorsQueue") || !isGetAtt(sqs["RoleArn"], "TelemetryRuleRole", "Arn") || sqs["UseBase64"] != false {
		t.Errorf("rule %s ErrorAction = %v; want Sqs to !Ref RuleErrorsQueue as TelemetryRuleRole, UseBase64 false (the stand-in writes the JSON message)", logical, ea)
	}
	switch d := payload["RuleDisabled"]; {
	case d == false:
	default:
		fn, arg, ok := intrinsicCall(d)
		l, _ := arg.([]any)
		if !ok || fn != "Fn::If" || len(l) != 3 || l[1] != false || l[2] != true {
			t.Fatalf("rule %s RuleDisabled = %v; want false or !If [<condition>, false, true]", logical, d)
		}
		cond, _ := l[0].(string)
		cfn, carg, _ := intrinsicCall(tpl.Conditions[cond])
		cl, _ := carg.([]any)
		if cfn != "Fn::Equals" || len(cl) != 2 || cl[1] != "true" {
			t.Fatalf("condition %s = %v; want !Equals [!Ref <parameter>, \"true\"]", cond, tpl.Conditions[cond])
		}
		_, param, _ := intrinsicCall(cl[0])
		spec.Parameter, _ = param.(string)
	}
	return spec
}

func asString(v any) string { s, _ := v.(string); return s }

func isRef(v any, name string) bool {
	fn, arg, ok := intrinsicCall(v)
	return ok && fn == "Ref" && arg == name
}

// TestRulesMatchSpec: every AWS::IoT::TopicRule of the template is a rule
// of cloud/rules with the same name (for stack prefixes with and without
// hyphens), SQL version, FROM, SELECT list, partition key and enabling
// parameter; neither side has a rule the other lacks. It fails when the
// template or cloud/rules changes alone, as TestPipesMatchRelay does for
// the Pipes.
func TestRulesMatchSpec(t *testing.T) {
	tpl := stackTemplate(t)
	hyphens := Env{}
	for k, v := range stackEnv {
		hyphens[k] = v
	}
	hyphens["StackPrefix"] = "dev-eu-1"
	var got, want []string
	for _, logical := range tpl.ResourceNames("AWS::IoT::TopicRule") {
		spec := ruleFromTemplate(t, tpl, logical, stackEnv)
		got = append(got, spec.Base)
		if again := ruleFromTemplate(t, tpl, logical, hyphens); again.Base != spec.Base {
			t.Errorf("rule %s: base %q for stack dev-eu-1, %q for prod", logical, again.Base, spec.Base)
		}
		if ref := stackEnv[logical]; ref != spec.Name(stackEnv["StackPrefix"]) {
			t.Errorf("stackEnv[%s] = %q; want the rule's name %q", logical, ref, spec.Name(stackEnv["StackPrefix"]))
		}
		w, ok := rules.ByBase(spec.Base)
		if !ok {
			continue
		}
		if spec.From != w.From || !reflect.DeepEqual(spec.Select, w.Select) {
			t.Errorf("rule %s = %q; cloud/rules %q", logical, tpl.Resources[logical].Properties["TopicRulePayload"].(map[string]any)["Sql"], w.SQL())
		}
		if spec.PartitionKey != w.PartitionKey {
			t.Errorf("rule %s partition key %s; cloud/rules %s", logical, spec.PartitionKey.Template(), w.PartitionKey.Template())
		}
		n, err := resources.New(stackEnv["StackPrefix"])
		if err != nil {
			t.Fatal(err)
		}
		kin := asMap(asMap(tpl.Resources[logical].Properties["TopicRulePayload"])["Actions"].([]any)[0])["Kinesis"]
		_, ref, _ := intrinsicCall(asMap(kin)["StreamName"])
		logicalStream, _ := ref.(string)
		if stream, _ := EvalString(prop(t, tpl, logicalStream, "Name"), stackEnv); stream != w.Stream(n) {
			t.Errorf("rule %s acts on %s %q; cloud/rules %q", logical, logicalStream, stream, w.Stream(n))
		}
		if queue, _ := EvalString(prop(t, tpl, "RuleErrorsQueue", "QueueName"), stackEnv); queue != w.ErrorQueue(n) {
			t.Errorf("rule %s errors to RuleErrorsQueue %q; cloud/rules %q", logical, queue, w.ErrorQueue(n))
		}
		if spec.Parameter != w.Parameter {
			t.Errorf("rule %s enabled by parameter %q; cloud/rules %q", logical, spec.Parameter, w.Parameter)
		}
		if w.Parameter != "" {
			if def := tpl.Parameters[w.Parameter]["Default"]; def != "true" {
				t.Errorf("parameter %s Default = %v; want \"true\" until the cut-over", w.Parameter, def)
			}
		}
	}
	for _, s := range rules.All() {
		want = append(want, s.Base)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CloudFormation topic rules %v; cloud/rules %v; want the same set", got, want)
	}
}

// TestRuleRoleAllowsItsActions: the rules' role may put into the stream
// and send to rule-errors, and nothing else the stand-in's actions need.
func TestRuleRoleAllowsItsActions(t *testing.T) {
	tpl := stackTemplate(t)
	env := tpl.ResourceEnv(map[string]string{"StackPrefix": "prod"}, "eu-west-1", "123456789012")
	p, err := tpl.RolePolicy("TelemetryRuleRole", env)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		action, resource string
		want             bool
	}{
		{"kinesis:PutRecord", env["TelemetryStream.Arn"], true},
		{"kinesis:PutRecord", env["EventsStream.Arn"], true},
		{"sqs:SendMessage", env["RuleErrorsQueue.Arn"], true},
		{"sqs:SendMessage", env["EventsQueue.Arn"], false},
		{"kinesis:GetRecords", env["TelemetryStream.Arn"], false},
	} {
		d, err := p.Evaluate(Request{Action: tc.action, Resource: tc.resource})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != tc.want {
			t.Errorf("TelemetryRuleRole %s on %s allowed = %v; want %v", tc.action, tc.resource, d.Allowed, tc.want)
		}
	}
	alarmed := false
	for _, a := range tpl.ResourceNames("AWS::CloudWatch::Alarm") {
		for _, d := range listOf(tpl.Resources[a].Properties["Dimensions"]) {
			alarmed = alarmed || isGetAtt(asMap(d)["Value"], "RuleErrorsQueue", "QueueName")
		}
	}
	if !alarmed {
		t.Error("no alarm watches RuleErrorsQueue")
	}
}

// TestGatewayPolicyAllowsEveryAgentTopic: AWS IoT disconnects a client
// whose publish is denied, so the gateway policy must allow every topic
// the agent uses, built as the agent builds them (edge/wire): its batch by
// Basic Ingest to the telemetry rule, the events of itself and of each
// bowl, its status with the retained last will, its v1 telemetry until the
// cut-over and its acknowledgement subscription. Another gateway's and
// another tenant's are denied, and a rule's FROM topic is open through the
// broker exactly when cloud/rules says gateways reach the rule that way.
func TestGatewayPolicyAllowsEveryAgentTopic(t *testing.T) {
	p := iotPolicy(t, "GatewayIotPolicy")
	stack := stackEnv["StackPrefix"]
	gw := IoTConnection{ClientID: "gw-1", ThingName: "gw-1", Attached: true, Attributes: map[string]string{"tenant": "t1"}}
	bowls := []string{"gw-1", "gw-1:kitchen", "gw-1:hall"}
	type op struct{ action, res string }
	topic := func(tenant, thing, kind string) string {
		return wire.Topic{Tenant: tenant, Thing: thing, Kind: kind}.String()
	}
	batch := func(tenant, thing string) string {
		return wire.BasicIngestTopic(rules.Telemetry.Name(stack), wire.Topic{Tenant: tenant, Thing: thing, Kind: wire.KindBatch})
	}
	events := func(tenant, thing string) string {
		return wire.BasicIngestTopic(rules.Events.Name(stack), wire.Topic{Tenant: tenant, Thing: thing, Kind: wire.KindEvents})
	}
	allowed := []op{
		{"iot:Connect", "client/gw-1"},
		{"iot:Publish", "topic/" + batch("t1", "gw-1")},
		{"iot:Publish", "topic/" + topic("t1", "gw-1", wire.KindStatus)},
		{"iot:RetainPublish", "topic/" + topic("t1", "gw-1", wire.KindStatus)},
		{"iot:Subscribe", "topicfilter/" + wire.AckTopic("t1", "gw-1")},
		{"iot:Receive", "topic/" + wire.AckTopic("t1", "gw-1")},
	}
	for _, b := range bowls {
		allowed = append(allowed,
			op{"iot:Publish", "topic/" + events("t1", b)},
			op{"iot:Publish", "topic/" + topic("t1", b, wire.KindEvents)},
			op{"iot:Publish", "topic/" + topic("t1", b, wire.KindTelemetry)})
	}
	denied := []op{
		// The batch carries every bowl: only under the gateway's own name,
		// only by Basic Ingest, only to this stack's rule.
		{"iot:Publish", "topic/" + batch("t1", "gw-1:kitchen")},
		{"iot:Publish", "topic/" + topic("t1", "gw-1", wire.KindBatch)},
		{"iot:Publish", "topic/" + wire.BasicIngestTopic(rules.Telemetry.Name("staging"), wire.Topic{Tenant: "t1", Thing: "gw-1", Kind: wire.KindBatch})},
		{"iot:Publish", "topic/" + wire.BasicIngestTopic(rules.TelemetryV1.Name(stack), wire.Topic{Tenant: "t1", Thing: "gw-1", Kind: wire.KindTelemetry})},
		// Another gateway of the tenant, and the same name in another tenant.
		{"iot:Publish", "topic/" + batch("t1", "gw-2")},
		{"iot:Publish", "topic/" + batch("t2", "gw-1")},
		{"iot:Publish", "topic/" + topic("t1", "gw-2", wire.KindEvents)},
		// Events only to this stack's rule, only its own and its bowls'.
		{"iot:Publish", "topic/" + events("t1", "gw-2")},
		{"iot:Publish", "topic/" + events("t2", "gw-1")},
		{"iot:Publish", "topic/" + events("t1", "gw-10")},
		{"iot:Publish", "topic/" + wire.BasicIngestTopic(rules.Events.Name("staging"), wire.Topic{Tenant: "t1", Thing: "gw-1", Kind: wire.KindEvents})},
		{"iot:Publish", "topic/" + wire.BasicIngestTopic(rules.Events.Name(stack), wire.Topic{Tenant: "t1", Thing: "gw-1", Kind: wire.KindBatch})},
		{"iot:Publish", "topic/" + topic("t2", "gw-1", wire.KindEvents)},
		{"iot:Publish", "topic/" + topic("t1", "gw-2:kitchen", wire.KindTelemetry)},
		{"iot:Publish", "topic/" + topic("t1", "gw-2", wire.KindStatus)},
		{"iot:RetainPublish", "topic/" + topic("t1", "gw-1:kitchen", wire.KindStatus)},
		{"iot:Subscribe", "topicfilter/" + wire.AckTopic("t1", "gw-2")},
		{"iot:Subscribe", "topicfilter/" + wire.AckTopic("t2", "gw-1")},
		{"iot:Receive", "topic/" + wire.AckTopic("t1", "gw-2")},
		{"iot:Publish", "topic/" + wire.AckTopic("t1", "gw-1")},
	}
	check := func(ops []op, want bool) {
		for _, o := range ops {
			got, err := p.Allowed(gw, IoTRequest{Action: o.action, Resource: iotARN + o.res})
			if err != nil {
				t.Fatalf("%s %s: %v", o.action, o.res, err)
			}
			if got != want {
				t.Errorf("gateway gw-1 of t1: %s %s allowed = %v; want %v", o.action, o.res, got, want)
			}
		}
	}
	check(allowed, true)
	check(denied, false)
	for _, s := range rules.All() {
		own := strings.NewReplacer("+/+", "t1/gw-1").Replace(s.From)
		got, err := p.Allowed(gw, IoTRequest{Action: "iot:Publish", Resource: iotARN + "topic/" + own})
		if err != nil {
			t.Fatal(err)
		}
		if got != s.Broker {
			t.Errorf("rule %s: gateway may publish %s through the broker = %v; cloud/rules Broker = %v", s.Base, own, got, s.Broker)
		}
	}
}
