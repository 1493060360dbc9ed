package cfn

import (
	"testing"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awscalls"
)

// TestCompletenessRoleIsScoped: the daily completeness job's role allows
// the shapes of its recorded calls (cloud/cmd/bowline
// TestCompletenessCommand) and nothing beside them: no other producer's
// idempotency rows, no consumer state rows, no registry, no plain write to
// the log, no anchors, no queue or stream.
func TestCompletenessRoleIsScoped(t *testing.T) {
	tpl := stackTemplate(t)
	env := tpl.ResourceEnv(map[string]string{"StackPrefix": "prod"}, "eu-west-1", awscalls.Account)
	p, err := tpl.RolePolicy("CompletenessRole", env)
	if err != nil {
		t.Fatal(err)
	}
	heads := "arn:aws:dynamodb:eu-west-1:" + awscalls.Account + ":table/prod-bowline-events/index/heads"
	tx := func(pk string) map[string][]string {
		return map[string][]string{awscalls.KeyLeadingKeys: {pk}, awscalls.KeyEnclosingOperation: {"TransactWriteItems"}}
	}
	key := func(pk string) map[string][]string { return map[string][]string{awscalls.KeyLeadingKeys: {pk}} }
	for _, tc := range []struct {
		name  string
		r     Request
		allow bool
	}{
		// Its recorded calls.
		{"list tenants", Request{Action: "dynamodb:Scan", Resource: heads}, true},
		{"read a log", Request{Action: "dynamodb:Query", Resource: env["EventsTable.Arn"], Context: key(engine.EventPK("t1"))}, true},
		{"read a head", Request{Action: "dynamodb:GetItem", Resource: env["EventsTable.Arn"], Context: key(engine.HeadPK("t1"))}, true},
		{"append an event", Request{Action: "dynamodb:PutItem", Resource: env["EventsTable.Arn"], Context: tx(engine.EventPK("t1"))}, true},
		{"move the head", Request{Action: "dynamodb:UpdateItem", Resource: env["EventsTable.Arn"], Context: tx(engine.HeadPK("t1"))}, true},
		{"look up its key", Request{Action: "dynamodb:GetItem", Resource: env["InboxTable.Arn"], Context: key("EMIT#t1#completeness/t1/2026-12-04")}, true},
		{"put its key", Request{Action: "dynamodb:PutItem", Resource: env["InboxTable.Arn"], Context: tx("EMIT#t1#completeness/t1/2026-12-04")}, true},
		{"put a part's key", Request{Action: "dynamodb:PutItem", Resource: env["InboxTable.Arn"], Context: tx("EMIT#t1#completeness/t1/2026-12-04/part-2")}, true},
		{"read rollups", Request{Action: "dynamodb:Query", Resource: env["TelemetryStateTable.Arn"], Context: key("ROLLUP#gw-1:a")}, true},
		// Outside its scope.
		{"scan the whole log", Request{Action: "dynamodb:Scan", Resource: env["EventsTable.Arn"]}, false},
		{"plain put of an event", Request{Action: "dynamodb:PutItem", Resource: env["EventsTable.Arn"], Context: key(engine.EventPK("t1"))}, false},
		{"update an event", Request{Action: "dynamodb:UpdateItem", Resource: env["EventsTable.Arn"], Context: tx(engine.EventPK("t1"))}, false},
		{"delete a head", Request{Action: "dynamodb:DeleteItem", Resource: env["EventsTable.Arn"], Context: tx(engine.HeadPK("t1"))}, false},
		{"put a look-alike row", Request{Action: "dynamodb:PutItem", Resource: env["EventsTable.Arn"], Context: tx("DEVICE#gw-1")}, false},
		{"put another producer's key", Request{Action: "dynamodb:PutItem", Resource: env["InboxTable.Arn"], Context: tx("EMIT#t1#gw-1/17")}, false},
		{"read another producer's key", Request{Action: "dynamodb:GetItem", Resource: env["InboxTable.Arn"], Context: key("EMIT#t1#gw-1/17")}, false},
		{"release a delivery", Request{Action: "dynamodb:UpdateItem", Resource: env["InboxTable.Arn"], Context: key("IDEMP#e:s")}, false},
		{"put a payment row", Request{Action: "dynamodb:PutItem", Resource: env["InboxTable.Arn"], Context: tx("PAYMENT#p1")}, false},
		{"read a gateway's state", Request{Action: "dynamodb:Query", Resource: env["TelemetryStateTable.Arn"], Context: key("GW#t1#gw-1")}, false},
		{"write a rollup", Request{Action: "dynamodb:PutItem", Resource: env["TelemetryStateTable.Arn"], Context: key("ROLLUP#gw-1:a")}, false},
		{"read the registry", Request{Action: "dynamodb:GetItem", Resource: env["AppTable.Arn"], Context: key("DEVICE#gw-1:a")}, false},
		{"register a device", Request{Action: "dynamodb:PutItem", Resource: env["AppTable.Arn"], Context: key("DEVICE#gw-1:a")}, false},
		{"write an anchor", Request{Action: "dynamodb:PutItem", Resource: env["AnchorsTable.Arn"], Context: key("ANCHOR#t1")}, false},
		{"send to the events queue", Request{Action: "sqs:SendMessage", Resource: env["EventsQueue.Arn"]}, false},
		{"put a record", Request{Action: "kinesis:PutRecord", Resource: env["EventsStream.Arn"]}, false},
	} {
		d, err := p.Evaluate(tc.r)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d.Allowed != tc.allow {
			t.Errorf("CompletenessRole: %s (%s on %s %v) allowed = %v; want %v", tc.name, tc.r.Action, tc.r.Resource, tc.r.Context, d.Allowed, tc.allow)
		}
	}
}

// TestCompletenessScheduleRunsOnlyItsTask: the schedule's role starts the
// completeness task and passes its two roles, nothing else; the schedule
// runs that task on the stack's cluster once a day, after 00:35 UTC (the
// last rollups of the day before).
func TestCompletenessScheduleRunsOnlyItsTask(t *testing.T) {
	tpl := stackTemplate(t)
	env := tpl.ResourceEnv(map[string]string{"StackPrefix": "prod"}, "eu-west-1", awscalls.Account)
	p, err := tpl.RolePolicy("CompletenessSchedulerRole", env)
	if err != nil {
		t.Fatal(err)
	}
	taskDef := func(family string) string {
		return "arn:aws:ecs:eu-west-1:" + awscalls.Account + ":task-definition/" + family + ":3"
	}
	for _, tc := range []struct {
		action, resource string
		allow            bool
	}{
		{"ecs:RunTask", taskDef("prod-bowline-completeness"), true},
		{"ecs:RunTask", taskDef("prod-bowline-anchor"), false},
		{"ecs:RunTask", taskDef("prod-bowline-worker"), false},
		{"ecs:RunTask", taskDef("staging-bowline-completeness"), false},
		{"iam:PassRole", env["CompletenessRole.Arn"], true},
		{"iam:PassRole", env["TaskExecutionRole.Arn"], true},
		{"iam:PassRole", env["OperatorRole.Arn"], false},
		{"iam:PassRole", env["AnchorRole.Arn"], false},
	} {
		d, err := p.Evaluate(Request{Action: tc.action, Resource: tc.resource})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != tc.allow {
			t.Errorf("CompletenessSchedulerRole: %s on %s allowed = %v; want %v", tc.action, tc.resource, d.Allowed, tc.allow)
		}
	}

	sched := tpl.Resources["CompletenessSchedule"].Properties
	if sched["ScheduleExpression"] != "cron(0 1 * * ? *)" || sched["ScheduleExpressionTimezone"] != "UTC" {
		t.Errorf("CompletenessSchedule runs at %v %v; want cron(0 1 * * ? *) UTC", sched["ScheduleExpression"], sched["ScheduleExpressionTimezone"])
	}
	target := asMap(sched["Target"])
	if !RefersTo(target["Arn"], "Cluster") || !RefersTo(target["RoleArn"], "CompletenessSchedulerRole") ||
		!RefersTo(asMap(target["EcsParameters"])["TaskDefinitionArn"], "CompletenessTaskDefinition") {
		t.Errorf("CompletenessSchedule target = %v; want CompletenessTaskDefinition on Cluster as CompletenessSchedulerRole", target)
	}
	td := tpl.Resources["CompletenessTaskDefinition"].Properties
	if !RefersTo(td["TaskRoleArn"], "CompletenessRole") {
		t.Errorf("CompletenessTaskDefinition task role = %v; want CompletenessRole", td["TaskRoleArn"])
	}
	c := asMap(listOf(td["ContainerDefinitions"])[0])
	if got := listOf(c["Command"]); len(got) != 5 || got[0] != "completeness" || got[1] != "anchor" || got[2] != "--all" || got[3] != "--days" || got[4] != "2" {
		t.Errorf("completeness task command = %v; want [completeness anchor --all --days 2]", got)
	}
}
