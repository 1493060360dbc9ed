package cfn

import (
	"errors"
	"strings"
	"testing"
)

// iamFixture is a small template with the shapes Bowline's roles use:
// tables (one with a stream and an index grant), a queue, a Kinesis stream,
// inline policies and a managed Deny attached through Roles.
const iamFixture = `Parameters:
  StackPrefix: {Type: String}
Resources:
  EventsTable:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Sub "${StackPrefix}-bowline-events"
      StreamSpecification: {StreamViewType: NEW_AND_OLD_IMAGES}
  AppTable:
    Type: AWS::DynamoDB::Table
    Properties: {TableName: !Sub "${StackPrefix}-bowline-app"}
  Queue:
    Type: AWS::SQS::Queue
    Properties: {QueueName: !Sub "${StackPrefix}-bowline-events.fifo"}
  Telemetry:
    Type: AWS::Kinesis::Stream
    Properties: {Name: !Sub "${StackPrefix}-bowline-telemetry"}
  Logs:
    Type: AWS::Logs::LogGroup
    Properties: {LogGroupName: /bowline/x}
  AppendOnly:
    Type: AWS::IAM::ManagedPolicy
    Properties:
      Roles: [!Ref R]
      PolicyDocument:
        Statement:
          - Sid: EventRows
            Effect: Deny
            Action: [dynamodb:UpdateItem, dynamodb:DeleteItem]
            Resource: !GetAtt EventsTable.Arn
            Condition: {ForAnyValue:StringLike: {dynamodb:LeadingKeys: ["TENANT#*#EVENT"]}}
  R:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument: {Statement: [{Effect: Allow, Principal: {Service: ecs-tasks.amazonaws.com}, Action: sts:AssumeRole}]}
      Policies:
        - PolicyName: p
          PolicyDocument:
            Statement:
              - Sid: Events
                Effect: Allow
                Action: [dynamodb:GetItem, "dynamodb:*Item", DynamoDB:Query]
                Resource: !GetAtt EventsTable.Arn
              - Sid: AppIndexes
                Effect: Allow
                Action: dynamodb:Query
                Resource: !Sub "${AppTable.Arn}/index/by-?enant"
              - Sid: Stream
                Effect: Allow
                Action: [dynamodb:GetRecords]
                Resource: !GetAtt EventsTable.StreamArn
              - Sid: Queue
                Effect: Allow
                Action: [sqs:SendMessage, sqs:GetQueueUrl]
                Resource: !GetAtt Queue.Arn
              - Sid: AnyTelemetry
                Effect: Allow
                Action: kinesis:PutRecords
                Resource: !Sub "arn:${AWS::Partition}:kinesis:*:${AWS::AccountId}:stream/${StackPrefix}-*"
              - Sid: ListEverything
                Effect: Allow
                Action: [sqs:ListQueues]
                Resource: "*"
              - Sid: NotSQS
                Effect: Allow
                NotAction: [sqs:*, dynamodb:*, kinesis:*]
                Resource: !GetAtt Logs.Arn
              - Sid: NoDeleteOutsideApp
                Effect: Deny
                Action: dynamodb:DeleteItem
                NotResource: !GetAtt AppTable.Arn
              - Sid: TransactOnly
                Effect: Allow
                Action: dynamodb:ConditionCheckItem
                Resource: !GetAtt AppTable.Arn
                Condition: {ForAnyValue:StringEquals: {dynamodb:EnclosingOperation: TransactWriteItems}}
`

const arnPrefix = "arn:aws:dynamodb:eu-west-1:123456789012:table/"

func fixturePolicy(t *testing.T, tpl string) (*RolePolicy, error) {
	t.Helper()
	parsed, err := Parse([]byte(tpl))
	if err != nil {
		t.Fatal(err)
	}
	return parsed.RolePolicy("R", parsed.ResourceEnv(map[string]string{"StackPrefix": "p"}, "eu-west-1", "123456789012"))
}

// TestEvaluate: IAM's decision for requests against the fixture role.
func TestEvaluate(t *testing.T) {
	p, err := fixturePolicy(t, iamFixture)
	if err != nil {
		t.Fatal(err)
	}
	lk := func(v ...string) map[string][]string { return map[string][]string{"dynamodb:LeadingKeys": v} }
	events := arnPrefix + "p-bowline-events"
	for _, tc := range []struct {
		name   string
		r      Request
		allow  bool
		denyBy string
	}{
		{"exact action and GetAtt Arn", Request{"dynamodb:GetItem", events, lk("TENANT#t#HEAD")}, true, ""},
		{"action names are case-insensitive", Request{"DYNAMODB:getitem", events, nil}, true, ""},
		{"wildcard in the action", Request{"dynamodb:PutItem", events, lk("TENANT#t#EVENT")}, true, ""},
		{"wildcard action covers nothing else", Request{"dynamodb:Scan", events, nil}, false, ""},
		{"explicit deny wins over an allow", Request{"dynamodb:UpdateItem", events, lk("TENANT#t#EVENT")}, false, "AppendOnly [EventRows]"},
		{"deny condition not met: allowed", Request{"dynamodb:UpdateItem", events, lk("TENANT#t#HEAD")}, true, ""},
		{"ForAnyValue: one matching key is enough", Request{"dynamodb:UpdateItem", events, lk("TENANT#t#HEAD", "TENANT#t#EVENT")}, false, "AppendOnly [EventRows]"},
		{"ForAnyValue on a missing key does not apply", Request{"dynamodb:UpdateItem", events, nil}, true, ""},
		{"table grant does not cover its index", Request{"dynamodb:Query", events + "/index/by-tenant", nil}, false, ""},
		{"index grant with ?", Request{"dynamodb:Query", arnPrefix + "p-bowline-app/index/by-tenant", nil}, true, ""},
		{"index grant is not the table", Request{"dynamodb:Query", arnPrefix + "p-bowline-app", nil}, false, ""},
		{"stream ARN", Request{"dynamodb:GetRecords", events + "/stream/2026-01-01T00:00:00.000", nil}, true, ""},
		{"stream grant is not the table", Request{"dynamodb:GetRecords", events, nil}, false, ""},
		{"queue ARN", Request{"sqs:SendMessage", "arn:aws:sqs:eu-west-1:123456789012:p-bowline-events.fifo", nil}, true, ""},
		{"other queue", Request{"sqs:SendMessage", "arn:aws:sqs:eu-west-1:123456789012:p-bowline-events-dlq.fifo", nil}, false, ""},
		{"wildcard region segment", Request{"kinesis:PutRecords", "arn:aws:kinesis:us-east-1:123456789012:stream/p-bowline-telemetry", nil}, true, ""},
		{"wildcards never cross the account", Request{"kinesis:PutRecords", "arn:aws:kinesis:us-east-1:999999999999:stream/p-bowline-telemetry", nil}, false, ""},
		{"no-resource action needs Resource *", Request{"sqs:ListQueues", "*", nil}, true, ""},
		{"a * request is not an ARN grant", Request{"sqs:GetQueueUrl", "*", nil}, false, ""},
		{"NotAction allows the rest", Request{"logs:PutLogEvents", "arn:aws:logs:eu-west-1:123456789012:log-group:/bowline/x:*", nil}, true, ""},
		{"NotAction excludes its actions", Request{"sqs:SendMessage", "arn:aws:logs:eu-west-1:123456789012:log-group:/bowline/x:*", nil}, false, ""},
		{"NotResource deny", Request{"dynamodb:DeleteItem", events, lk("TENANT#t#HEAD")}, false, "R policy p [NoDeleteOutsideApp]"},
		{"condition on a key present", Request{"dynamodb:ConditionCheckItem", arnPrefix + "p-bowline-app", map[string][]string{"dynamodb:EnclosingOperation": {"TransactWriteItems"}}}, true, ""},
		{"condition on a missing key", Request{"dynamodb:ConditionCheckItem", arnPrefix + "p-bowline-app", nil}, false, ""},
	} {
		d, err := p.Evaluate(tc.r)
		if err != nil {
			t.Errorf("%s: Evaluate(%+v): %v", tc.name, tc.r, err)
			continue
		}
		by := ""
		if d.Deny >= 0 {
			by = p.Grants[d.Deny].Source
		}
		if d.Allowed != tc.allow || by != tc.denyBy {
			t.Errorf("%s: %s on %s = allowed %v, denied by %q; want %v, %q", tc.name, tc.r.Action, tc.r.Resource, d.Allowed, by, tc.allow, tc.denyBy)
		}
	}
}

// TestConditionOperators: IAM's rules for each operator, set qualifier and
// missing key.
func TestConditionOperators(t *testing.T) {
	const key = "dynamodb:LeadingKeys"
	for _, tc := range []struct {
		op   string
		want []string
		ctx  []string // nil: the key is absent
		hold bool
	}{
		{"StringEquals", []string{"a"}, []string{"a"}, true},
		{"StringEquals", []string{"a"}, []string{"A"}, false},
		{"StringEqualsIgnoreCase", []string{"a"}, []string{"A"}, true},
		{"StringEquals", []string{"a"}, nil, false},
		{"StringEqualsIfExists", []string{"a"}, nil, true},
		{"StringEqualsIfExists", []string{"a"}, []string{"b"}, false},
		{"StringNotEquals", []string{"a"}, nil, true},
		{"StringNotEquals", []string{"a", "b"}, []string{"b"}, false},
		{"StringNotEqualsIgnoreCase", []string{"a"}, []string{"A"}, false},
		{"StringLike", []string{"T#*#E?"}, []string{"T#x#EV"}, true},
		{"StringNotLike", []string{"T#*"}, []string{"U"}, true},
		{"StringNotLike", []string{"T#*"}, nil, true},
		{"ForAnyValue:StringLike", []string{"x*"}, []string{"a", "xb"}, true},
		{"ForAnyValue:StringLike", []string{"x*"}, nil, false},
		{"ForAllValues:StringLike", []string{"x*"}, []string{"xa", "b"}, false},
		{"ForAllValues:StringLike", []string{"x*"}, []string{"xa", "xb"}, true},
		{"ForAllValues:StringLike", []string{"x*"}, nil, true},
		{"ForAnyValue:StringNotLike", []string{"x*"}, []string{"xa", "b"}, true},
		{"Null", []string{"true"}, nil, true},
		{"Null", []string{"true"}, []string{"a"}, false},
		{"Null", []string{"false"}, []string{"a"}, true},
		{"Bool", []string{"true"}, []string{"true"}, true},
	} {
		ctx := map[string][]string{}
		if tc.ctx != nil {
			ctx[key] = tc.ctx
		}
		got, err := conditionsHold(map[string]map[string][]string{tc.op: {key: tc.want}}, ctx)
		if err != nil || got != tc.hold {
			t.Errorf("%s %v against %v = %v, %v; want %v", tc.op, tc.want, tc.ctx, got, err, tc.hold)
		}
	}
	if _, err := conditionsHold(map[string]map[string][]string{"StringLike": {key: {"x"}}}, map[string][]string{key: {"a", "b"}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("single-valued operator on two values = %v; want ErrUnsupported", err)
	}
}

// TestRolePolicyRefuses: what the evaluator cannot decide is an error, not
// a guess.
func TestRolePolicyRefuses(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"unresolvable GetAtt", "Resource: !GetAtt Queue.Arn", "Resource: !GetAtt Missing.Arn", "does not resolve"},
		{"unresolvable Ref", "Resource: !GetAtt Queue.Arn", "Resource: !Ref ApiSecretArn", "does not resolve"},
		{"attribute the evaluator does not know", "Resource: !GetAtt Queue.Arn", "Resource: !GetAtt Queue.Nope", "does not resolve"},
		{"unknown condition key", "dynamodb:EnclosingOperation: TransactWriteItems", "dynamodb:Attributes: [x]", "condition key"},
		{"unknown condition operator", "StringEquals: {dynamodb:EnclosingOperation", "DateGreaterThan: {dynamodb:EnclosingOperation", "condition operator"},
		{"single-valued operator on a multivalued key", "ForAnyValue:StringEquals: {dynamodb:EnclosingOperation", "StringEquals: {dynamodb:EnclosingOperation", "multivalued key"},
		{"policy variable", "Resource: !GetAtt Queue.Arn", "Resource: 'arn:aws:sqs:*:*:${aws:username}'", "policy variables"},
	} {
		if !strings.Contains(iamFixture, tc.from) {
			t.Fatalf("%s: fixture has no %q", tc.name, tc.from)
		}
		_, err := fixturePolicy(t, strings.Replace(iamFixture, tc.from, tc.to, 1))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: RolePolicy = %v; want an error mentioning %q", tc.name, err, tc.want)
		}
	}
	ext := strings.Replace(iamFixture, "      Policies:\n", "      ManagedPolicyArns: [arn:aws:iam::aws:policy/AdministratorAccess]\n      Policies:\n", 1)
	if _, err := fixturePolicy(t, ext); !errors.Is(err, ErrUnsupported) {
		t.Errorf("AWS-managed policy: RolePolicy = %v; want ErrUnsupported", err)
	}
}

// TestResourceEnv: names and ARNs the evaluator resolves references to.
func TestResourceEnv(t *testing.T) {
	tpl := stackTemplate(t)
	env := tpl.ResourceEnv(map[string]string{"StackPrefix": "prod"}, "eu-west-1", "123456789012")
	for name, want := range map[string]string{
		"EventsTable.Arn":       "arn:aws:dynamodb:eu-west-1:123456789012:table/prod-bowline-events",
		"EventsTable.StreamArn": "arn:aws:dynamodb:eu-west-1:123456789012:table/prod-bowline-events/stream/*",
		"EventsTable":           "prod-bowline-events",
		"EventsQueue.Arn":       "arn:aws:sqs:eu-west-1:123456789012:prod-bowline-events.fifo",
		"EventsQueue":           "https://sqs.eu-west-1.amazonaws.com/123456789012/prod-bowline-events.fifo",
		"EventsDLQ.QueueName":   "prod-bowline-events-dlq.fifo",
		"TelemetryStream.Arn":   "arn:aws:kinesis:eu-west-1:123456789012:stream/prod-bowline-telemetry",
		"PipeLogGroup.Arn":      "arn:aws:logs:eu-west-1:123456789012:log-group:/bowline/prod/pipes:*",
		"WorkerTaskRole.Arn":    "arn:aws:iam::123456789012:role/prod-bowline-worker",
		"AWS::AccountId":        "123456789012",
	} {
		if got := env[name]; got != want {
			t.Errorf("ResourceEnv[%s] = %q; want %q", name, got, want)
		}
	}
	if v, ok := env["DeadLettersTable.StreamArn"]; ok {
		t.Errorf("DeadLettersTable.StreamArn = %q; the table has no stream", v)
	}
}

// TestMatchARN: wildcards per ARN segment.
func TestMatchARN(t *testing.T) {
	for _, tc := range []struct {
		pattern, arn string
		want         bool
	}{
		{"*", "arn:aws:sqs:r:1:q", true},
		{"*", "*", true},
		{"arn:aws:sqs:r:1:q", "*", false},
		{"arn:aws:sqs:*:1:q", "arn:aws:sqs:r:1:q", true},
		{"arn:aws:sqs:*", "arn:aws:sqs:r:1:q", false}, // fewer segments
		{"arn:aws:dynamodb:r:1:table/t/*", "arn:aws:dynamodb:r:1:table/t/index/i", true},
		{"arn:aws:dynamodb:r:1:table/t*", "arn:aws:dynamodb:r:1:table/t/stream/s", true},
		{"arn:aws:dynamodb:r:1:table/t", "arn:aws:dynamodb:r:1:table/T", false},
		{"arn:aws:logs:r:1:log-group:/g:*", "arn:aws:logs:r:1:log-group:/g:log-stream:x", true},
	} {
		if got := MatchARN(tc.pattern, tc.arn); got != tc.want {
			t.Errorf("MatchARN(%q, %q) = %v; want %v", tc.pattern, tc.arn, got, tc.want)
		}
	}
}
