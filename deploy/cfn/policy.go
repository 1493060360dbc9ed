package cfn

import (
	"fmt"
	"strings"
)

// Statement is one statement of an IAM or IoT policy document. Resources
// keep their template form (strings or intrinsics); evaluate them with
// EvalString.
type Statement struct {
	Sid    string
	Effect string // Allow or Deny
	// Actions are the Action entries; NotAction marks a statement written
	// with NotAction (whose entries are then in Actions).
	Actions   []string
	NotAction bool
	Resources []any
	// NotResource marks a statement written with NotResource.
	NotResource bool
	Condition   map[string]any
	// Principal is a trust policy statement's Principal, as written.
	Principal any
}

// Statements reads the statements of a policy document.
func Statements(doc any) ([]Statement, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("policy document is %s: %w", kind(doc), ErrUnsupported)
	}
	raw := m["Statement"]
	list, ok := raw.([]any)
	if !ok {
		list = []any{raw}
	}
	out := make([]Statement, 0, len(list))
	for i, r := range list {
		sm, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("statement %d is %s: %w", i, kind(r), ErrUnsupported)
		}
		st := Statement{Condition: asMap(sm["Condition"]), Principal: sm["Principal"]}
		st.Sid, _ = sm["Sid"].(string)
		st.Effect, _ = sm["Effect"].(string)
		actions, hasAction := sm["Action"]
		if na, ok := sm["NotAction"]; ok {
			actions, st.NotAction = na, true
		} else if !hasAction {
			return nil, fmt.Errorf("statement %d (%s) has no Action", i, st.Sid)
		}
		for _, a := range listOf(actions) {
			s, ok := a.(string)
			if !ok {
				return nil, fmt.Errorf("statement %d (%s): computed action: %w", i, st.Sid, ErrUnsupported)
			}
			st.Actions = append(st.Actions, s)
		}
		res, hasRes := sm["Resource"]
		if nr, ok := sm["NotResource"]; ok {
			res, st.NotResource = nr, true
		} else if !hasRes {
			// trust policies name a Principal instead
			if _, ok := sm["Principal"]; !ok {
				return nil, fmt.Errorf("statement %d (%s) has no Resource", i, st.Sid)
			}
		}
		st.Resources = listOf(res)
		out = append(out, st)
	}
	return out, nil
}

func listOf(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	}
	return []any{v}
}

// RoleStatements collects what role (an AWS::IAM::Role's logical id) may do:
// its inline policies, the template's managed policies in its
// ManagedPolicyArns, and the AWS::IAM::Policy and AWS::IAM::ManagedPolicy
// resources that list it in Roles. AWS-managed policies (ARNs outside the
// template) are returned by name in external.
func (t *Template) RoleStatements(role string) (stmts []Statement, external []string, err error) {
	r, ok := t.Resources[role]
	if !ok || r.Type != "AWS::IAM::Role" {
		return nil, nil, fmt.Errorf("role %q: not an AWS::IAM::Role of the template", role)
	}
	add := func(what string, doc any) error {
		s, err := Statements(doc)
		if err != nil {
			return fmt.Errorf("role %s: %s: %w", role, what, err)
		}
		stmts = append(stmts, s...)
		return nil
	}
	for i, p := range listOf(r.Properties["Policies"]) {
		if err := add(fmt.Sprintf("inline policy %d", i), asMap(p)["PolicyDocument"]); err != nil {
			return nil, nil, err
		}
	}
	for _, arn := range listOf(r.Properties["ManagedPolicyArns"]) {
		if fn, arg, ok := intrinsicCall(arn); ok && fn == "Ref" {
			if mp, ok := t.Resources[fmt.Sprint(arg)]; ok && mp.Type == "AWS::IAM::ManagedPolicy" {
				if err := add(fmt.Sprint(arg), mp.Properties["PolicyDocument"]); err != nil {
					return nil, nil, err
				}
				continue
			}
		}
		s, err := EvalString(arn, Env{"AWS::Partition": "aws"})
		if err != nil {
			return nil, nil, fmt.Errorf("role %s: managed policy %v: %w", role, arn, err)
		}
		external = append(external, s)
	}
	for _, name := range t.ResourceNames("") {
		p := t.Resources[name]
		if p.Type != "AWS::IAM::Policy" && p.Type != "AWS::IAM::ManagedPolicy" {
			continue
		}
		for _, target := range listOf(p.Properties["Roles"]) {
			if fn, arg, ok := intrinsicCall(target); ok && fn == "Ref" && arg == role {
				if err := add(name, p.Properties["PolicyDocument"]); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return stmts, external, nil
}

// MatchGlob reports whether s matches an IAM pattern: * is any run of
// characters (including none and "/"), ? any single character, the rest
// literal. Matching is case sensitive, as for resources and condition values.
func MatchGlob(pattern, s string) bool {
	// Iterative wildcard matching with backtracking to the last *.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// MatchAction reports whether action (service:Name) matches an action
// pattern; action names are case insensitive.
func MatchAction(pattern, action string) bool {
	return MatchGlob(strings.ToLower(pattern), strings.ToLower(action))
}
