package cfn

import (
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/internal/awscalls"
)

// TestRolesWriteOnlyTheirOwnKeys: each role writes, table by table, only
// the key prefixes its recorded calls show (issue 22 §3): a compromised
// ingest cannot re-home a bowl (DEVICE#) or rewrite a contact or an order,
// the worker cannot put inbox rows, and so on. The allowed probes are the
// recorded shapes, so the scoping is checked from both sides.
func TestRolesWriteOnlyTheirOwnKeys(t *testing.T) {
	tpl := stackTemplate(t)
	env := tpl.ResourceEnv(map[string]string{"StackPrefix": "prod"}, "eu-west-1", awscalls.Account)
	table := func(n string) string { return env[n+".Arn"] }
	type probe struct {
		role, action, table, pk string
		allow                   bool
	}
	var probes []probe
	add := func(role, action, tbl string, allow bool, pks ...string) {
		for _, pk := range pks {
			probes = append(probes, probe{role, action, tbl, pk, allow})
		}
	}
	// ingest
	add("IngestRole", "dynamodb:PutItem", "AppTable", true, "SEQ#gw-1:bowl-1")
	add("IngestRole", "dynamodb:GetItem", "AppTable", true, "DEVICE#gw-1:bowl-1", "SEQ#gw-1:bowl-1")
	add("IngestRole", "dynamodb:PutItem", "AppTable", false, "DEVICE#gw-1:bowl-1", "CONTACT#t1", "ORDER#o-1", "PET#t1#p1", "LEASE#ingest#bowline-prod-ingest", "LEASE#other#x")
	add("IngestRole", "dynamodb:PutItem", "InboxTable", true, "EMIT#t1#gw-1/1")
	add("IngestRole", "dynamodb:PutItem", "InboxTable", false, "INGEST#t1#gw-1/1")
	add("IngestRole", "dynamodb:GetItem", "InboxTable", true, "EMIT#t1#gw-1/1", "INGEST#t1#gw-1/1")
	add("IngestRole", "dynamodb:PutItem", "InboxTable", false, "IDEMP#e:s", "PAYMENT#p1", "APIKEY#t1#k", "RECONCILE#SCAN")
	add("IngestRole", "dynamodb:PutItem", "DeadLettersTable", true, "TENANT#t1", "POISON#03")
	add("IngestRole", "dynamodb:PutItem", "DeadLettersTable", false, "UNMATCHED", "X")
	// worker
	add("WorkerTaskRole", "dynamodb:UpdateItem", "InboxTable", true, "IDEMP#e:s")
	add("WorkerTaskRole", "dynamodb:PutItem", "InboxTable", false, "IDEMP#e:s", "EMIT#t1#k", "PAYMENT#p1")
	add("WorkerTaskRole", "dynamodb:UpdateItem", "InboxTable", false, "PAYMENT#p1", "RECONCILE#SCAN")
	add("WorkerTaskRole", "dynamodb:UpdateItem", "AppTable", true, "PET#t1#p1", "FAULT#t1#gw-1:bowl-1")
	add("WorkerTaskRole", "dynamodb:UpdateItem", "AppTable", false, "DEVICE#gw-1", "ORDER#o-1", "CONTACT#t1")
	add("WorkerTaskRole", "dynamodb:PutItem", "AppTable", false, "PET#t1#p1", "DEVICE#gw-1")
	add("WorkerTaskRole", "dynamodb:PutItem", "DeadLettersTable", true, "TENANT#t1", "POISON#15")
	add("WorkerTaskRole", "dynamodb:UpdateItem", "DeadLettersTable", true, "UNMATCHED")
	// api
	add("ApiTaskRole", "dynamodb:PutItem", "AppTable", true, "ORDER#o-1")
	add("ApiTaskRole", "dynamodb:PutItem", "AppTable", false, "DEVICE#gw-1", "CONTACT#t1", "PET#t1#p1", "SEQ#gw-1")
	add("ApiTaskRole", "dynamodb:UpdateItem", "AppTable", false, "DEVICE#gw-1", "CONTACT#t1")
	add("ApiTaskRole", "dynamodb:PutItem", "InboxTable", true, "PAYMENT#p1", "APIKEY#t1#k")
	add("ApiTaskRole", "dynamodb:PutItem", "InboxTable", false, "IDEMP#e:s", "INGEST#t1#x", "EMIT#t1#k")
	add("ApiTaskRole", "dynamodb:UpdateItem", "InboxTable", true, "RECONCILE#TENANT#t1", "IDEMP#e:s")
	add("ApiTaskRole", "dynamodb:UpdateItem", "InboxTable", false, "PAYMENT#p1", "EMIT#t1#k")
	add("ApiTaskRole", "dynamodb:UpdateItem", "DeadLettersTable", false, "POISON#00", "UNMATCHED")
	// operator
	add("OperatorRole", "dynamodb:PutItem", "AppTable", true, "DEVICE#gw-1")
	add("OperatorRole", "dynamodb:PutItem", "AppTable", false, "ORDER#o-1", "CONTACT#t1", "PET#t1#p1")
	add("OperatorRole", "dynamodb:UpdateItem", "InboxTable", true, "IDEMP#e:s")
	add("OperatorRole", "dynamodb:UpdateItem", "InboxTable", false, "PAYMENT#p1", "APIKEY#t1#k")
	add("OperatorRole", "dynamodb:PutItem", "InboxTable", false, "PAYMENT#p1", "IDEMP#e:s")
	add("OperatorRole", "dynamodb:GetItem", "AppTable", true, "DEVICE#gw-1:a")
	add("OperatorRole", "dynamodb:GetItem", "AppTable", false, "CONTACT#t1", "ORDER#o-1")
	add("OperatorRole", "dynamodb:Query", "TelemetryStateTable", true, "ROLLUP#gw-1:a")
	add("OperatorRole", "dynamodb:Query", "TelemetryStateTable", false, "GW#t1#gw-1")
	// anchor
	add("AnchorRole", "dynamodb:PutItem", "AnchorsTable", true, "ANCHOR#t1", "TENANTS")
	add("AnchorRole", "dynamodb:PutItem", "AnchorsTable", false, "X#t1")

	for _, p := range probes {
		pol, err := tpl.RolePolicy(p.role, env)
		if err != nil {
			t.Fatal(err)
		}
		d, err := pol.Evaluate(Request{Action: p.action, Resource: table(p.table), Context: map[string][]string{awscalls.KeyLeadingKeys: {p.pk}}})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != p.allow {
			t.Errorf("%s: %s on %s pk %q allowed = %v; want %v", p.role, p.action, p.table, p.pk, d.Allowed, p.allow)
		}
	}
}

// TestTrustPoliciesAreScoped: a role a service assumes names this account
// (aws:SourceAccount) and, where the service supplies it, the resource
// acting (aws:SourceArn), against the confused deputy; no role trusts the
// whole account (":root").
func TestTrustPoliciesAreScoped(t *testing.T) {
	tpl := stackTemplate(t)
	for _, role := range tpl.ResourceNames("AWS::IAM::Role") {
		stmts, err := Statements(tpl.Resources[role].Properties["AssumeRolePolicyDocument"])
		if err != nil {
			t.Fatal(err)
		}
		if len(stmts) == 0 {
			t.Errorf("role %s has no trust policy", role)
		}
		for _, st := range stmts {
			principal := asMap(st.Principal)
			for _, p := range listOf(principal["AWS"]) {
				if s, _ := EvalString(p, Env{"AWS::Partition": "aws", "AWS::AccountId": "123456789012"}); strings.HasSuffix(s, ":root") {
					t.Errorf("role %s trusts the whole account (%s)", role, s)
				}
			}
			svc := listOf(principal["Service"])
			if len(svc) == 0 {
				continue
			}
			keys := map[string]bool{}
			for _, kv := range st.Condition {
				for k := range asMap(kv) {
					keys[strings.ToLower(k)] = true
				}
			}
			if !keys["aws:sourceaccount"] {
				t.Errorf("role %s: service %v may assume it without aws:SourceAccount", role, svc)
			}
			// Lambda does not pass the function as aws:SourceArn when it
			// assumes an execution role.
			if svc[0] != "lambda.amazonaws.com" && !keys["aws:sourcearn"] {
				t.Errorf("role %s: service %v may assume it without aws:SourceArn", role, svc)
			}
		}
	}
}

// TestExecutionRolePullsAndLogsOnlyThisStack: the task execution role
// pulls from the stack's repository only and writes only the stack's task
// log groups (it attached AmazonECSTaskExecutionRolePolicy, which grants
// both on every repository and log group of the account).
func TestExecutionRolePullsAndLogsOnlyThisStack(t *testing.T) {
	tpl := stackTemplate(t)
	repo := "arn:aws:ecr:eu-west-1:123456789012:repository/bowline"
	env := tpl.ResourceEnv(map[string]string{"StackPrefix": "prod", "ContainerRepositoryArn": repo,
		"ApiSecretArn": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:api",
	}, "eu-west-1", awscalls.Account)
	p, err := tpl.RolePolicy("TaskExecutionRole", env)
	if err != nil {
		t.Fatal(err)
	}
	logs := func(group string) string {
		return "arn:aws:logs:eu-west-1:123456789012:log-group:" + group + ":log-stream:x"
	}
	for _, tc := range []struct {
		action, resource string
		allow            bool
	}{
		{"ecr:GetAuthorizationToken", "*", true},
		{"ecr:BatchGetImage", repo, true},
		{"ecr:GetDownloadUrlForLayer", repo, true},
		{"ecr:BatchGetImage", "arn:aws:ecr:eu-west-1:123456789012:repository/other", false},
		{"logs:PutLogEvents", logs("/bowline/prod/worker"), true},
		{"logs:PutLogEvents", logs("/bowline/prod/ingest"), false},
		{"logs:CreateLogStream", logs("/bowline/prod/anchor"), true},
		{"logs:PutLogEvents", logs("/bowline/prod/completeness"), true},
		{"logs:PutLogEvents", logs("/bowline/staging/ingest"), false},
		{"logs:PutLogEvents", logs("/aws/lambda/other"), false},
		{"secretsmanager:GetSecretValue", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:api", true},
		{"secretsmanager:GetSecretValue", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:other", false},
	} {
		d, err := p.Evaluate(Request{Action: tc.action, Resource: tc.resource})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != tc.allow {
			t.Errorf("TaskExecutionRole: %s on %s allowed = %v; want %v", tc.action, tc.resource, d.Allowed, tc.allow)
		}
	}
}
