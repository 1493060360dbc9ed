package cfn

import (
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/engine"
)

// eventRowMutations are the actions that could change or remove an event
// row; the Deny must cover at least UpdateItem and DeleteItem.
var eventRowMutations = []string{"dynamodb:UpdateItem", "dynamodb:DeleteItem"}

// resourceless are the actions AWS authorizes on Resource "*" only: they
// name no table, queue or stream (the Service Authorization Reference
// lists no resource type for them), so "*" is their only grant.
var resourceless = map[string]bool{
	"dynamodb:liststreams": true, "dynamodb:listtables": true, "sqs:listqueues": true, "ecr:getauthorizationtoken": true,
}

// reachesTable reports whether an Allow statement grants a DynamoDB action
// on table (its ARN, its stream, or a wildcard that could cover it).
func reachesTable(st Statement, table string) bool {
	if st.Effect != "Allow" {
		return false
	}
	dynamo := false
	for _, a := range st.Actions {
		if resourceless[strings.ToLower(a)] {
			continue
		}
		dynamo = dynamo || MatchAction(a, "dynamodb:GetItem") || strings.HasPrefix(strings.ToLower(a), "dynamodb:")
	}
	if !dynamo && !st.NotAction {
		return false
	}
	for _, r := range st.Resources {
		if RefersTo(r, table) {
			return true
		}
		if s, ok := r.(string); ok && (s == "*" || strings.Contains(s, "table/*") || strings.Contains(s, "-bowline-events")) {
			return true
		}
	}
	return st.NotResource
}

// denyPatterns returns the dynamodb:LeadingKeys patterns under which st
// denies every action of eventRowMutations on table, or nil.
func denyPatterns(st Statement, table string) []string {
	if st.Effect != "Deny" || st.NotAction || st.NotResource {
		return nil
	}
	for _, want := range eventRowMutations {
		covered := false
		for _, a := range st.Actions {
			covered = covered || MatchAction(a, want)
		}
		if !covered {
			return nil
		}
	}
	onTable := false
	for _, r := range st.Resources {
		onTable = onTable || isGetAtt(r, table, "Arn")
	}
	if !onTable || len(st.Condition) != 1 {
		return nil
	}
	var out []string
	for _, k := range listOf(asMap(st.Condition["ForAnyValue:StringLike"])["dynamodb:LeadingKeys"]) {
		if s, ok := k.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// TestEventRowsDeniedForEveryRoleThatReachesEvents: every role with any
// DynamoDB grant on the events table also carries an explicit Deny of
// UpdateItem and DeleteItem on event rows, and that Deny's key pattern
// matches the engine's event-row partition key and not its chain head (which
// Emit must keep updating).
func TestEventRowsDeniedForEveryRoleThatReachesEvents(t *testing.T) {
	tpl := stackTemplate(t)
	reaching := 0
	for _, role := range tpl.ResourceNames("AWS::IAM::Role") {
		stmts, _, err := tpl.RoleStatements(role)
		if err != nil {
			t.Fatal(err)
		}
		reaches := false
		for _, st := range stmts {
			reaches = reaches || reachesTable(st, "EventsTable")
		}
		if !reaches {
			continue
		}
		reaching++
		var patterns []string
		for _, st := range stmts {
			patterns = append(patterns, denyPatterns(st, "EventsTable")...)
		}
		if len(patterns) == 0 {
			t.Errorf("role %s reaches the events table without the Deny of %v on event rows", role, eventRowMutations)
			continue
		}
		match := func(pk string) bool {
			for _, p := range patterns {
				if MatchGlob(p, pk) {
					return true
				}
			}
			return false
		}
		for _, tenant := range []string{"t1", "acme-co", "x#y"} {
			if !match(engine.EventPK(tenant)) {
				t.Errorf("role %s: Deny patterns %q miss event rows %q", role, patterns, engine.EventPK(tenant))
			}
			if match(engine.HeadPK(tenant)) {
				t.Errorf("role %s: Deny patterns %q also hit the chain head %q", role, patterns, engine.HeadPK(tenant))
			}
		}
	}
	if reaching < 4 {
		t.Errorf("%d roles reach the events table; want at least ingest, worker, api and the events pipe", reaching)
	}
}

// dataServices own data: an Allow on them must name its resources.
var dataServices = []string{"dynamodb", "sqs", "kinesis", "s3", "sns", "secretsmanager", "kms"}

// TestNoWildcardActionsOnData: no Allow statement in any role or policy uses
// a wildcard action, NotAction or NotResource, and none grants a data
// service on "*" or on a wildcard resource name.
func TestNoWildcardActionsOnData(t *testing.T) {
	tpl := stackTemplate(t)
	check := func(owner string, stmts []Statement) {
		for _, st := range stmts {
			if st.Effect != "Allow" {
				continue
			}
			if st.NotAction || st.NotResource {
				t.Errorf("%s: Allow with NotAction/NotResource (%s)", owner, st.Sid)
			}
			data := false
			for _, a := range st.Actions {
				if strings.Contains(a, "*") {
					t.Errorf("%s: Allow of wildcard action %q", owner, a)
				}
				if resourceless[strings.ToLower(a)] {
					if len(st.Actions) != 1 {
						t.Errorf("%s: %s, which only \"*\" grants, shares a statement with %v", owner, a, st.Actions)
					}
					continue
				}
				svc, _, _ := strings.Cut(strings.ToLower(a), ":")
				for _, d := range dataServices {
					data = data || svc == d
				}
			}
			if !data {
				continue
			}
			for _, r := range st.Resources {
				s, err := EvalString(r, Env{"AWS::Partition": "aws", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012",
					"StackPrefix": "prod", "ApiSecretArn": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:api"})
				if err != nil {
					// GetAtt of a resource of the template: a single resource.
					if fn, _, ok := intrinsicCall(r); ok && fn == "Fn::GetAtt" {
						continue
					}
					t.Errorf("%s: resource %v: %v", owner, r, err)
					continue
				}
				if strings.Contains(s, "*") {
					t.Errorf("%s: %v on wildcard resource %q", owner, st.Actions, s)
				}
			}
		}
	}
	for _, role := range tpl.ResourceNames("AWS::IAM::Role") {
		stmts, external, err := tpl.RoleStatements(role)
		if err != nil {
			t.Fatal(err)
		}
		check("role "+role, stmts)
		for _, e := range external {
			if e != "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy" {
				t.Errorf("role %s attaches AWS-managed policy %s; only the ECS task execution policy is reviewed", role, e)
			}
		}
	}
	for _, typ := range []string{"AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"} {
		for _, name := range tpl.ResourceNames(typ) {
			stmts, err := Statements(tpl.Resources[name].Properties["PolicyDocument"])
			if err != nil {
				t.Fatal(err)
			}
			check(name, stmts)
		}
	}
}

// TestPolicyChecksCatchMistakes runs the checks above on broken roles, so a
// check that silently accepts everything fails here.
func TestPolicyChecksCatchMistakes(t *testing.T) {
	base := `Resources:
  EventsTable: {Type: AWS::DynamoDB::Table}
  R:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument: {Statement: [{Effect: Allow, Principal: {Service: ecs-tasks.amazonaws.com}, Action: sts:AssumeRole}]}
      Policies:
        - PolicyName: p
          PolicyDocument:
            Statement:
`
	allow := "              - {Effect: Allow, Action: [dynamodb:PutItem], Resource: !GetAtt EventsTable.Arn}\n"
	for _, tc := range []struct {
		name, stmts string
		reaches     bool
		patterns    int
	}{
		{"no deny", allow, true, 0},
		{"deny without condition", allow + "              - {Effect: Deny, Action: [dynamodb:UpdateItem, dynamodb:DeleteItem], Resource: !GetAtt EventsTable.Arn}\n", true, 0},
		{"deny misses DeleteItem", allow + "              - {Effect: Deny, Action: dynamodb:UpdateItem, Resource: !GetAtt EventsTable.Arn, Condition: {ForAnyValue:StringLike: {dynamodb:LeadingKeys: ['TENANT#*#EVENT']}}}\n", true, 0},
		{"deny by wildcard", allow + "              - {Effect: Deny, Action: 'dynamodb:*Item', Resource: !GetAtt EventsTable.Arn, Condition: {ForAnyValue:StringLike: {dynamodb:LeadingKeys: ['TENANT#*#EVENT']}}}\n", true, 1},
		{"wildcard resource reaches", "              - {Effect: Allow, Action: dynamodb:Query, Resource: '*'}\n", true, 0},
		{"other table", "              - {Effect: Allow, Action: dynamodb:Query, Resource: !GetAtt Other.Arn}\n", false, 0},
	} {
		tpl, err := Parse([]byte(base + tc.stmts))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		stmts, _, err := tpl.RoleStatements("R")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		reaches, patterns := false, 0
		for _, st := range stmts {
			reaches = reaches || reachesTable(st, "EventsTable")
			patterns += len(denyPatterns(st, "EventsTable"))
		}
		if reaches != tc.reaches || patterns != tc.patterns {
			t.Errorf("%s: reaches %v, deny patterns %d; want %v, %d", tc.name, reaches, patterns, tc.reaches, tc.patterns)
		}
	}
}
