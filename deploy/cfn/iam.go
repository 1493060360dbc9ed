package cfn

import (
	"fmt"
	"strings"

	"github.com/bowline-iot/bowline/internal/awscalls"
)

// This file evaluates IAM identity policies of the template's roles the
// way AWS does for a request in the role's own account with no resource
// policy, permissions boundary, session policy or SCP: an explicit Deny
// wins, else an Allow, else the request is implicitly denied. Actions
// match case-insensitively with * and ?; resources match per ARN segment,
// case-sensitively, with * and ?; NotAction and NotResource invert their
// statement's match; conditions use the operators and keys below, and a
// policy using any other is refused when it is resolved, never ignored.

// ResourceEnv returns the Env that resolves the template for one stack:
// params (StackPrefix, ...), the pseudo parameters AWS::Region,
// AWS::AccountId, AWS::Partition and AWS::URLSuffix, and Ref and GetAtt of
// the resources whose names and ARNs are known before deployment (tables
// with Arn and StreamArn, queues, Kinesis streams, log groups, roles,
// managed policies, SNS topics, pipes). A table's StreamArn is its stream
// ARN pattern "<table arn>/stream/*" (the real one ends in a creation
// time). A resource whose name CloudFormation generates has no entry, so
// a policy naming it does not resolve.
func (t *Template) ResourceEnv(params map[string]string, region, account string) Env {
	env := Env{"AWS::Region": region, "AWS::AccountId": account, "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}
	for k, v := range params {
		env[k] = v
	}
	base := Env{}
	for k, v := range env {
		base[k] = v
	}
	arn := func(service, resource string) string {
		return "arn:aws:" + service + ":" + region + ":" + account + ":" + resource
	}
	for _, logical := range t.ResourceNames("") {
		r := t.Resources[logical]
		name := func(prop string) (string, bool) {
			s, err := EvalString(r.Properties[prop], base)
			return s, err == nil && s != "" && r.Properties[prop] != nil
		}
		set := func(attrs map[string]string) {
			for k, v := range attrs {
				if k == "" {
					env[logical] = v
				} else {
					env[logical+"."+k] = v
				}
			}
		}
		switch r.Type {
		case "AWS::DynamoDB::Table":
			if n, ok := name("TableName"); ok {
				a := arn("dynamodb", "table/"+n)
				set(map[string]string{"": n, "Arn": a})
				if r.Properties["StreamSpecification"] != nil {
					env[logical+".StreamArn"] = a + "/stream/*"
				}
			}
		case "AWS::SQS::Queue":
			if n, ok := name("QueueName"); ok {
				u := "https://sqs." + region + ".amazonaws.com/" + account + "/" + n
				set(map[string]string{"": u, "Arn": arn("sqs", n), "QueueName": n, "QueueUrl": u})
			}
		case "AWS::Kinesis::Stream":
			if n, ok := name("Name"); ok {
				set(map[string]string{"": n, "Arn": arn("kinesis", "stream/"+n)})
			}
		case "AWS::Logs::LogGroup":
			if n, ok := name("LogGroupName"); ok {
				set(map[string]string{"": n, "Arn": arn("logs", "log-group:"+n+":*")})
			}
		case "AWS::IAM::Role":
			if n, ok := name("RoleName"); ok {
				set(map[string]string{"": n, "Arn": "arn:aws:iam::" + account + ":role/" + n})
			}
		case "AWS::IAM::ManagedPolicy":
			if n, ok := name("ManagedPolicyName"); ok {
				set(map[string]string{"": "arn:aws:iam::" + account + ":policy/" + n})
			}
		case "AWS::SNS::Topic":
			if n, ok := name("TopicName"); ok {
				a := arn("sns", n)
				set(map[string]string{"": a, "TopicArn": a, "TopicName": n})
			}
		case "AWS::Pipes::Pipe":
			if n, ok := name("Name"); ok {
				set(map[string]string{"": n, "Arn": arn("pipes", "pipe/"+n)})
			}
		}
	}
	return env
}

// Grant is one resolved statement of a role's identity policies.
type Grant struct {
	// Source names where the statement is: "WorkerTaskRole policy worker
	// [ConsumeQueues]", "EventLogAppendOnlyPolicy [EventRowsAreAppendOnly]".
	Source string
	Effect string
	// Actions, or the actions it does not cover (NotAction).
	Actions   []string
	NotAction bool
	// Resources are ARN patterns, or those it does not cover
	// (NotResource); Written is each one as the template writes it.
	Resources   []string
	Written     []string
	NotResource bool
	// Conditions are operator -> key -> values, validated.
	Conditions map[string]map[string][]string
}

// RolePolicy is everything a role's identity policies say, resolved for
// one stack.
type RolePolicy struct {
	Role   string
	Grants []Grant
}

// RolePolicy resolves role's statements (RoleStatements) with env
// (ResourceEnv). It fails on a reference that does not resolve, an
// AWS-managed policy (its statements are not in the template), a policy
// variable in a resource, and a condition operator or key the evaluator
// does not implement.
func (t *Template) RolePolicy(role string, env Env) (*RolePolicy, error) {
	stmts, external, err := t.RoleStatements(role)
	if err != nil {
		return nil, err
	}
	if len(external) > 0 {
		return nil, fmt.Errorf("role %s attaches %s: its statements are not in the template: %w", role, strings.Join(external, ", "), ErrUnsupported)
	}
	sources := t.statementSources(role)
	p := &RolePolicy{Role: role}
	for i, st := range stmts {
		g := Grant{Source: sources[i], Effect: st.Effect, Actions: st.Actions, NotAction: st.NotAction, NotResource: st.NotResource}
		if st.Sid != "" {
			g.Source += " [" + st.Sid + "]"
		}
		if g.Effect != "Allow" && g.Effect != "Deny" {
			return nil, fmt.Errorf("%s: effect %q", g.Source, g.Effect)
		}
		for _, r := range st.Resources {
			s, err := EvalString(r, env)
			if err != nil {
				return nil, fmt.Errorf("%s: resource %s does not resolve: %w", g.Source, Written(r), err)
			}
			if strings.Contains(s, "${") {
				return nil, fmt.Errorf("%s: resource %q: policy variables: %w", g.Source, s, ErrUnsupported)
			}
			g.Resources = append(g.Resources, s)
			g.Written = append(g.Written, Written(r))
		}
		if g.Conditions, err = resolveConditions(st.Condition, env); err != nil {
			return nil, fmt.Errorf("%s: %w", g.Source, err)
		}
		p.Grants = append(p.Grants, g)
	}
	return p, nil
}

// statementSources names the policy of each statement RoleStatements
// returns, in the same order.
func (t *Template) statementSources(role string) []string {
	var out []string
	r := t.Resources[role]
	add := func(name string, doc any) {
		stmts, _ := Statements(doc)
		for range stmts {
			out = append(out, name)
		}
	}
	for i, p := range listOf(r.Properties["Policies"]) {
		name, _ := asMap(p)["PolicyName"].(string)
		if name == "" {
			name = fmt.Sprint(i)
		}
		add(role+" policy "+name, asMap(p)["PolicyDocument"])
	}
	for _, arn := range listOf(r.Properties["ManagedPolicyArns"]) {
		if fn, arg, ok := intrinsicCall(arn); ok && fn == "Ref" {
			if mp, ok := t.Resources[fmt.Sprint(arg)]; ok && mp.Type == "AWS::IAM::ManagedPolicy" {
				add(fmt.Sprint(arg), mp.Properties["PolicyDocument"])
			}
		}
	}
	for _, name := range t.ResourceNames("") {
		p := t.Resources[name]
		if p.Type != "AWS::IAM::Policy" && p.Type != "AWS::IAM::ManagedPolicy" {
			continue
		}
		for _, target := range listOf(p.Properties["Roles"]) {
			if fn, arg, ok := intrinsicCall(target); ok && fn == "Ref" && arg == role {
				add(name, p.Properties["PolicyDocument"])
			}
		}
	}
	return out
}

// Written renders a template value as the template writes it: "!GetAtt
// EventsTable.Arn", "!Ref X", "!Sub '...'", or the literal.
func Written(v any) string {
	fn, arg, ok := intrinsicCall(v)
	if !ok {
		return fmt.Sprint(v)
	}
	switch fn {
	case "Ref":
		return fmt.Sprintf("!Ref %v", arg)
	case "Fn::GetAtt":
		if l, ok := arg.([]any); ok && len(l) == 2 {
			return fmt.Sprintf("!GetAtt %v.%v", l[0], l[1])
		}
	case "Fn::Sub":
		if s, ok := arg.(string); ok {
			return fmt.Sprintf("!Sub %q", s)
		}
	}
	return fmt.Sprintf("%s %v", fn, arg)
}

// ConditionKeys are the condition keys the evaluator can decide: those the
// call recorder fills in (internal/awscalls), each true when AWS documents
// it as multivalued.
//
// Both DynamoDB keys are multivalued: AWS's examples test
// dynamodb:LeadingKeys with ForAllValues:StringEquals (Amazon DynamoDB
// Developer Guide, "Using IAM policy conditions for fine-grained access
// control") and dynamodb:EnclosingOperation with ForAnyValue:StringEquals
// (the same guide, "Using IAM with DynamoDB transactions", where the key
// holds TransactWriteItems or TransactGetItems on each item of a
// transaction and is absent on a plain call). A single-valued operator on
// a multivalued key is refused, as IAM Access Analyzer flags it: test such
// a key with ForAnyValue:, ForAllValues: or Null.
var ConditionKeys = map[string]bool{
	strings.ToLower(awscalls.KeyLeadingKeys):        true,
	strings.ToLower(awscalls.KeyEnclosingOperation): true,
}

// conditionOps are the operators the evaluator implements (with an
// optional ForAnyValue:/ForAllValues: prefix and IfExists suffix).
var conditionOps = map[string]bool{
	"StringEquals": true, "StringNotEquals": true, "StringEqualsIgnoreCase": true,
	"StringNotEqualsIgnoreCase": true, "StringLike": true, "StringNotLike": true,
	"Bool": true, "Null": true,
}

// parseOp splits "ForAnyValue:StringLikeIfExists" into its set qualifier,
// base operator and IfExists.
func parseOp(op string) (set, base string, ifExists bool, err error) {
	base = op
	if q, rest, ok := strings.Cut(op, ":"); ok {
		if q != "ForAnyValue" && q != "ForAllValues" {
			return "", "", false, fmt.Errorf("condition operator %q: %w", op, ErrUnsupported)
		}
		set, base = q, rest
	}
	if b, ok := strings.CutSuffix(base, "IfExists"); ok && base != "Null" {
		base, ifExists = b, true
	}
	if !conditionOps[base] || (base == "Null" && (set != "" || ifExists)) {
		return "", "", false, fmt.Errorf("condition operator %q: %w", op, ErrUnsupported)
	}
	return set, base, ifExists, nil
}

// resolveConditions evaluates a statement's Condition block and checks
// every operator and key is one the evaluator decides.
func resolveConditions(cond map[string]any, env Env) (map[string]map[string][]string, error) {
	if len(cond) == 0 {
		return nil, nil
	}
	out := map[string]map[string][]string{}
	for op, keys := range cond {
		if _, _, _, err := parseOp(op); err != nil {
			return nil, err
		}
		km, ok := keys.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("condition %s: want a map of keys: %w", op, ErrUnsupported)
		}
		out[op] = map[string][]string{}
		set, base, _, _ := parseOp(op)
		for key, vals := range km {
			multi, known := ConditionKeys[strings.ToLower(key)]
			if !known {
				return nil, fmt.Errorf("condition key %q: the call recorder does not supply it, so it cannot be decided: %w", key, ErrUnsupported)
			}
			if multi && set == "" && base != "Null" {
				return nil, fmt.Errorf("condition %s on %s: a multivalued key needs ForAnyValue: or ForAllValues: (or Null): %w", op, key, ErrUnsupported)
			}
			for _, v := range listOf(vals) {
				s, err := EvalString(v, env)
				if err != nil {
					return nil, fmt.Errorf("condition %s %s: value %s does not resolve: %w", op, key, Written(v), err)
				}
				out[op][key] = append(out[op][key], s)
			}
		}
	}
	return out, nil
}

// Request is one authorization request: an action on a resource ARN (or
// "*"), with the condition keys of its context.
type Request struct {
	Action   string
	Resource string
	Context  map[string][]string
}

// Use is one (statement, action pattern, resource pattern) of a policy
// that matched a request.
type Use struct{ Grant, Action, Resource int }

// Decision is the outcome of a request.
type Decision struct {
	Allowed bool
	// Deny is the grant whose explicit Deny decided, or -1.
	Deny int
	// Allows are the Allow patterns that matched (all of them, for the
	// unused-grant report); empty on an implicit deny.
	Allows []Use
}

// Evaluate decides r against p.
func (p *RolePolicy) Evaluate(r Request) (Decision, error) {
	d := Decision{Deny: -1}
	if !strings.Contains(r.Action, ":") {
		return d, fmt.Errorf("action %q: want service:Action", r.Action)
	}
	for i, g := range p.Grants {
		uses, err := g.match(r)
		if err != nil {
			return d, fmt.Errorf("%s: %w", g.Source, err)
		}
		if len(uses) == 0 {
			continue
		}
		if g.Effect == "Deny" {
			if d.Deny < 0 {
				d.Deny = i
			}
			continue
		}
		for _, u := range uses {
			d.Allows = append(d.Allows, Use{Grant: i, Action: u[0], Resource: u[1]})
		}
	}
	d.Allowed = d.Deny < 0 && len(d.Allows) > 0
	if d.Deny >= 0 {
		d.Allows = nil
	}
	return d, nil
}

// match returns the (action index, resource index) pairs of g that cover
// r when its conditions hold; nil when g does not apply. For NotAction or
// NotResource the index is -1.
func (g Grant) match(r Request) ([][2]int, error) {
	var actions []int
	if g.NotAction {
		covered := false
		for _, a := range g.Actions {
			covered = covered || MatchAction(a, r.Action)
		}
		if covered {
			return nil, nil
		}
		actions = []int{-1}
	} else {
		for i, a := range g.Actions {
			if MatchAction(a, r.Action) {
				actions = append(actions, i)
			}
		}
	}
	var resources []int
	if g.NotResource {
		covered := false
		for _, p := range g.Resources {
			covered = covered || MatchARN(p, r.Resource)
		}
		if covered {
			return nil, nil
		}
		resources = []int{-1}
	} else {
		for i, p := range g.Resources {
			if MatchARN(p, r.Resource) {
				resources = append(resources, i)
			}
		}
	}
	if len(actions) == 0 || len(resources) == 0 {
		return nil, nil
	}
	ok, err := conditionsHold(g.Conditions, r.Context)
	if err != nil || !ok {
		return nil, err
	}
	var out [][2]int
	for _, a := range actions {
		for _, res := range resources {
			out = append(out, [2]int{a, res})
		}
	}
	return out, nil
}

// MatchARN reports whether a resource ARN matches a policy's resource
// pattern: "*" matches everything (also a request on "*"); otherwise both
// are split into their six colon-separated segments and each segment is
// matched with MatchGlob, so a wildcard never spans the service, region or
// account. A request on "*" (an action with no resource) matches only "*".
func MatchARN(pattern, arn string) bool {
	if pattern == "*" {
		return true
	}
	if arn == "*" {
		return false
	}
	ps, as := strings.SplitN(pattern, ":", 6), strings.SplitN(arn, ":", 6)
	if len(ps) != 6 || len(as) != 6 {
		return false
	}
	for i := range ps {
		if !MatchGlob(ps[i], as[i]) {
			return false
		}
	}
	return true
}

// conditionsHold evaluates a resolved Condition block against a request
// context: every operator and key must hold (AND); a key holds when any of
// its policy values matches (OR), with IAM's rules for multivalued keys
// (ForAnyValue, ForAllValues) and missing keys (false, but true for the
// negated operators, IfExists and Null).
func conditionsHold(conds map[string]map[string][]string, ctx map[string][]string) (bool, error) {
	lookup := func(key string) ([]string, bool) {
		for k, v := range ctx {
			if strings.EqualFold(k, key) {
				return v, true
			}
		}
		return nil, false
	}
	for _, op := range sortedKeys(conds) {
		set, base, ifExists, err := parseOp(op)
		if err != nil {
			return false, err
		}
		negated := strings.Contains(base, "Not")
		for _, key := range sortedKeys(conds[op]) {
			want := conds[op][key]
			got, present := lookup(key)
			var holds bool
			switch {
			case base == "Null":
				// "true": the key must be absent; "false": present.
				holds = len(want) > 0 && (want[0] == "true") == !present
			case !present:
				switch {
				case set == "ForAllValues":
					holds = true
				case set == "ForAnyValue":
					holds = false
				default:
					holds = ifExists || negated
				}
			default:
				one := func(v string) bool { return matchValue(base, want, v) }
				switch set {
				case "ForAnyValue":
					for _, v := range got {
						holds = holds || one(v)
					}
				case "ForAllValues":
					holds = true
					for _, v := range got {
						holds = holds && one(v)
					}
				default:
					if len(got) != 1 {
						return false, fmt.Errorf("condition %s on %s: the request has %d values; a multivalued key needs ForAnyValue or ForAllValues: %w", op, key, len(got), ErrUnsupported)
					}
					holds = one(got[0])
				}
			}
			if !holds {
				return false, nil
			}
		}
	}
	return true, nil
}

// matchValue reports whether one request value satisfies op against the
// policy values: for a positive operator, some value matches; for a
// negated one, none does.
func matchValue(op string, want []string, v string) bool {
	positive := strings.Replace(op, "Not", "", 1)
	hit := false
	for _, w := range want {
		switch positive {
		case "StringEquals":
			hit = hit || w == v
		case "StringEqualsIgnoreCase":
			hit = hit || strings.EqualFold(w, v)
		case "StringLike":
			hit = hit || MatchGlob(w, v)
		case "Bool":
			hit = hit || strings.EqualFold(w, v)
		}
	}
	if positive != op {
		return !hit
	}
	return hit
}
