package cfn

import (
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awscalls"
)

// call is a recorded request of part on stack p in eu-west-1.
func call(part, action, resource string, ctx map[string][]string) awscalls.Call {
	return awscalls.Call{Part: part, Stack: "p", Region: "eu-west-1", Operation: "Test." + action, Action: action, Resource: resource, Context: ctx}
}

// TestCheckCalls: the first denied request is reported with its role, the
// Allow patterns nothing used are listed per role, parts with no role are
// counted apart, and what cannot be decided is an error.
func TestCheckCalls(t *testing.T) {
	tpl, err := Parse([]byte(iamFixture))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]PartRoles{"svc": {Roles: []string{"R"}}, "local": {Reason: "runs only locally"}}
	events := arnPrefix + "p-bowline-events"
	calls := []awscalls.Call{
		call("svc", "dynamodb:GetItem", events, nil),
		call("local", "dynamodb:CreateTable", events, nil),
		call("svc", "dynamodb:UpdateItem", events, map[string][]string{"dynamodb:LeadingKeys": {"TENANT#t#EVENT"}}),
		call("svc", "sqs:DeleteMessage", "arn:aws:sqs:eu-west-1:123456789012:p-bowline-events.fifo", nil),
	}
	rep, err := CheckCalls(tpl, calls, parts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 3 || len(rep.Denied) != 2 {
		t.Fatalf("checked %d, denied %+v; want 3 checked and 2 denied", rep.Requests, rep.Denied)
	}
	first := rep.Denied[0]
	if first.Role != "R" || first.Action != "dynamodb:UpdateItem" || first.Resource != events || first.By != "AppendOnly [EventRows]" {
		t.Errorf("first denied = %+v; want R's UpdateItem on %s, denied by AppendOnly [EventRows]", first, events)
	}
	if s := first.String(); !strings.Contains(s, "role R") || !strings.Contains(s, "dynamodb:UpdateItem") || !strings.Contains(s, events) {
		t.Errorf("denial reads %q; want role, action and resource", s)
	}
	if second := rep.Denied[1]; second.By != "" || !strings.Contains(second.String(), "no statement allows it") {
		t.Errorf("second denied = %q; want an implicit deny", second)
	}
	if len(rep.NotChecked) != 1 || rep.NotChecked[0].Part != "local" || rep.NotChecked[0].Requests != 1 {
		t.Errorf("not checked = %+v; want part local, 1 request", rep.NotChecked)
	}
	if len(rep.Roles) != 1 {
		t.Fatalf("roles = %+v; want R only", rep.Roles)
	}
	unused := map[string]bool{}
	for _, u := range rep.Roles[0].Unused {
		unused[u.Source+" "+u.Action+" "+u.Resource] = true
	}
	for _, want := range []string{
		"R policy p [Events] DynamoDB:Query !GetAtt EventsTable.Arn",
		"R policy p [Queue] sqs:SendMessage !GetAtt Queue.Arn",
		"R policy p [ListEverything] sqs:ListQueues *",
	} {
		if !unused[want] {
			t.Errorf("unused grants %v lack %q", unused, want)
		}
	}
	for _, used := range []string{"R policy p [Events] dynamodb:GetItem !GetAtt EventsTable.Arn", "R policy p [Events] dynamodb:*Item !GetAtt EventsTable.Arn"} {
		if unused[used] {
			t.Errorf("%q is reported unused; a recorded request used it", used)
		}
	}

	for _, tc := range []struct {
		name string
		c    awscalls.Call
		want string
	}{
		{"unknown part", call("stranger", "dynamodb:GetItem", events, nil), "no role is mapped"},
		{"unattributed call", awscalls.Call{Part: "svc", Stack: "p", Region: "eu-west-1", Operation: "Kinesis.ListShards", Error: "no stream"}, "no stream"},
	} {
		if _, err := CheckCalls(tpl, []awscalls.Call{tc.c}, parts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckCalls = %v; want an error mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := CheckCalls(tpl, []awscalls.Call{call("svc", "dynamodb:GetItem", events, nil)}, map[string]PartRoles{"svc": {Roles: []string{"Missing"}}}); err == nil {
		t.Errorf("CheckCalls with a role the template lacks = nil; want an error")
	}
}

// TestStackRolesAllowTheKnownGaps: the requests a review found the roles
// refusing (issue 13) are allowed now, and the event log's Deny still
// holds, without emulators: a regression check beside the recorded one.
func TestStackRolesAllowTheKnownGaps(t *testing.T) {
	tpl := stackTemplate(t)
	acct := ":" + awscalls.Account + ":"
	table := func(n string) string { return "arn:aws:dynamodb:eu-west-1" + acct + "table/prod-bowline-" + n }
	queue := func(n string) string { return "arn:aws:sqs:eu-west-1" + acct + "prod-bowline-" + n }
	lk := func(k string) map[string][]string { return map[string][]string{awscalls.KeyLeadingKeys: {k}} }
	for _, tc := range []struct {
		role, action, resource string
		ctx                    map[string][]string
		allow                  bool
	}{
		{"IngestRole", "dynamodb:PutItem", table("dead_letters"), lk("POISON#07"), true},
		{"IngestRole", "dynamodb:PutItem", table("app"), lk("SEQ#bowl-1"), true},
		{"WorkerTaskRole", "sqs:GetQueueUrl", queue("events-dlq.fifo"), nil, true},
		{"WorkerTaskRole", "sqs:SendMessage", queue("events-dlq.fifo"), nil, true},
		{"ApiTaskRole", "dynamodb:BatchGetItem", table("inbox"), lk("IDEMP#e#s"), true},
		{"EventsPipeRole", "dynamodb:GetRecords", table("events") + "/stream/2026-01-01T00:00:00.000", nil, true},
		// Still refused: event rows stay append-only, and no task scans
		// what it does not need.
		{"IngestRole", "dynamodb:UpdateItem", table("events"), lk(engine.EventPK("t")), false},
		{"WorkerTaskRole", "dynamodb:DeleteItem", table("events"), lk(engine.EventPK("t")), false},
		{"ApiTaskRole", "dynamodb:UpdateItem", table("events"), lk(engine.EventPK("t")), false},
		{"IngestRole", "dynamodb:Scan", table("events"), nil, false},
		// Ingest takes events only: the topic rules write the telemetry
		// stream (docs/telemetry-path.md).
		{"IngestRole", "kinesis:PutRecords", "arn:aws:kinesis:eu-west-1" + acct + "stream/prod-bowline-telemetry", nil, false},
		{"WorkerTaskRole", "sqs:SendMessage", queue("events.fifo"), nil, false},
	} {
		p, err := tpl.RolePolicy(tc.role, tpl.ResourceEnv(map[string]string{"StackPrefix": "prod"}, "eu-west-1", awscalls.Account))
		if err != nil {
			t.Fatal(err)
		}
		d, err := p.Evaluate(Request{Action: tc.action, Resource: tc.resource, Context: tc.ctx})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != tc.allow {
			t.Errorf("%s: %s on %s allowed = %v; want %v", tc.role, tc.action, tc.resource, d.Allowed, tc.allow)
		}
	}
}

// TestEveryMappedRoleResolves: each role BowlineParts names exists and
// resolves, so the recorded check cannot fail on the map itself.
func TestEveryMappedRoleResolves(t *testing.T) {
	tpl := stackTemplate(t)
	env := tpl.ResourceEnv(map[string]string{"StackPrefix": "prod"}, "eu-west-1", awscalls.Account)
	for part, pr := range BowlineParts {
		if len(pr.Roles) == 0 && pr.Reason == "" {
			t.Errorf("part %s has neither roles nor a reason", part)
		}
		for _, role := range pr.Roles {
			if _, err := tpl.RolePolicy(role, env); err != nil {
				t.Errorf("part %s: %v", part, err)
			}
		}
	}
}

// TestSharedPartIsChargedToNoRole: the calls of a part several tasks share
// (the engine of `bowline dev`) pass when one of its roles allows them, are
// denied only when none does, and count as using no grant, so a grant only
// they reach is reported unused (issue 22: the worker's inbox PutItem).
func TestSharedPartIsChargedToNoRole(t *testing.T) {
	tpl, err := Parse([]byte(iamFixture + `  Q:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument: {Statement: [{Effect: Allow, Principal: {Service: ecs-tasks.amazonaws.com}, Action: sts:AssumeRole}]}
      Policies:
        - PolicyName: q
          PolicyDocument:
            Statement:
              - Sid: Queue
                Effect: Allow
                Action: sqs:SendMessage
                Resource: !GetAtt Queue.Arn
`))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]PartRoles{"shared": {Roles: []string{"R", "Q"}, Any: true}}
	events := arnPrefix + "p-bowline-events"
	rep, err := CheckCalls(tpl, []awscalls.Call{
		call("shared", "dynamodb:GetItem", events, nil),
		call("shared", "kinesis:GetRecords", "arn:aws:kinesis:eu-west-1:123456789012:stream/p-bowline-telemetry", nil),
	}, parts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Denied) != 2 || rep.Denied[0].Action != "kinesis:GetRecords" || rep.Denied[1].Action != "kinesis:GetRecords" {
		t.Fatalf("denied = %v; want kinesis:GetRecords once per role, and GetItem (allowed by R) not at all", rep.Denied)
	}
	for _, r := range rep.Roles {
		if r.Role != "R" {
			continue
		}
		found := false
		for _, u := range r.Unused {
			found = found || (u.Action == "dynamodb:GetItem" && u.Resource == "!GetAtt EventsTable.Arn")
		}
		if !found {
			t.Errorf("R's unused grants %v lack dynamodb:GetItem on the events table; a shared part's call must not count as using it", r.Unused)
		}
	}
}
