package cfn

import (
	"fmt"
	"strings"
)

// IoTConnection is the MQTT client a policy is evaluated for.
type IoTConnection struct {
	ClientID  string
	ThingName string
	// Attached is true when the client's certificate is attached to
	// ThingName (AWS IoT only resolves thing policy variables then).
	Attached   bool
	Attributes map[string]string
}

// IoTRequest is one operation: Action is iot:Connect, iot:Publish,
// iot:RetainPublish, iot:Subscribe or iot:Receive; Resource the full ARN
// (client/<id>, topic/<topic> or topicfilter/<filter>).
type IoTRequest struct {
	Action   string
	Resource string
}

// IoTPolicy is an AWS IoT policy with its template expressions evaluated;
// only the IoT policy variables remain.
type IoTPolicy struct {
	stmts []iotStatement
}

type iotStatement struct {
	effect    string
	actions   []string
	resources []string
	cond      map[string]any
}

// NewIoTPolicy reads an AWS::IoT::Policy's PolicyDocument, evaluating its
// resources with env (AWS::Partition, AWS::Region, AWS::AccountId and
// parameters). ${!iot:...} escapes become the policy variables ${iot:...}.
func NewIoTPolicy(doc any, env Env) (*IoTPolicy, error) {
	stmts, err := Statements(doc)
	if err != nil {
		return nil, fmt.Errorf("iot policy: %w", err)
	}
	p := &IoTPolicy{}
	for i, s := range stmts {
		if s.NotAction || s.NotResource {
			return nil, fmt.Errorf("iot policy statement %d: NotAction/NotResource: %w", i, ErrUnsupported)
		}
		is := iotStatement{effect: s.Effect, actions: s.Actions, cond: s.Condition}
		for _, r := range s.Resources {
			v, err := EvalString(r, env)
			if err != nil {
				return nil, fmt.Errorf("iot policy statement %d: %w", i, err)
			}
			is.resources = append(is.resources, v)
		}
		p.stmts = append(p.stmts, is)
	}
	return p, nil
}

// Allowed evaluates req for conn: an explicit Deny wins, else an Allow
// whose action, resource and condition match permits, else it is denied.
func (p *IoTPolicy) Allowed(conn IoTConnection, req IoTRequest) (bool, error) {
	allowed := false
	for i, s := range p.stmts {
		ok, err := s.matches(conn, req)
		if err != nil {
			return false, fmt.Errorf("iot policy statement %d: %w", i, err)
		}
		if !ok {
			continue
		}
		if s.effect == "Deny" {
			return false, nil
		}
		allowed = allowed || s.effect == "Allow"
	}
	return allowed, nil
}

func (s iotStatement) matches(conn IoTConnection, req IoTRequest) (bool, error) {
	actionOK := false
	for _, a := range s.actions {
		actionOK = actionOK || MatchAction(a, req.Action)
	}
	if !actionOK {
		return false, nil
	}
	condOK, err := iotCondition(s.cond, conn)
	if err != nil || !condOK {
		return false, err
	}
	for _, r := range s.resources {
		pattern, resolved, err := substituteIoTVars(r, conn)
		if err != nil {
			return false, err
		}
		if resolved && MatchGlob(pattern, req.Resource) {
			return true, nil
		}
	}
	return false, nil
}

// iotVar resolves one policy variable; ok is false when it has no value for
// conn (the statement then matches nothing).
func iotVar(name string, conn IoTConnection) (val string, ok bool, err error) {
	switch {
	case name == "iot:ClientId":
		return conn.ClientID, conn.ClientID != "", nil
	case name == "iot:Connection.Thing.ThingName":
		return conn.ThingName, conn.Attached && conn.ThingName != "", nil
	case name == "iot:Connection.Thing.IsAttached":
		return fmt.Sprint(conn.Attached), true, nil
	case strings.HasPrefix(name, "iot:Connection.Thing.Attributes[") && strings.HasSuffix(name, "]"):
		attr := strings.TrimSuffix(strings.TrimPrefix(name, "iot:Connection.Thing.Attributes["), "]")
		v, has := conn.Attributes[attr]
		return v, conn.Attached && has, nil
	}
	return "", false, fmt.Errorf("policy variable ${%s}: %w", name, ErrUnsupported)
}

// substituteIoTVars replaces ${iot:...} in a resource pattern. Values are
// inserted as they are: AWS IoT thing names cannot hold * or ?, and
// deploy/README.md restricts the tenant attribute to the same characters the
// edge accepts for a topic segment.
func substituteIoTVars(pattern string, conn IoTConnection) (string, bool, error) {
	var b strings.Builder
	for {
		i := strings.Index(pattern, "${")
		if i < 0 {
			b.WriteString(pattern)
			return b.String(), true, nil
		}
		end := strings.IndexByte(pattern[i:], '}')
		if end < 0 {
			return "", false, fmt.Errorf("resource %q: unclosed ${", pattern)
		}
		val, ok, err := iotVar(pattern[i+2:i+end], conn)
		if err != nil || !ok {
			return "", false, err
		}
		b.WriteString(pattern[:i])
		b.WriteString(val)
		pattern = pattern[i+end+1:]
	}
}

// iotCondition evaluates the Bool operator on policy variables; other
// operators are reported as unsupported.
func iotCondition(cond map[string]any, conn IoTConnection) (bool, error) {
	for op, body := range cond {
		if op != "Bool" {
			return false, fmt.Errorf("condition operator %s: %w", op, ErrUnsupported)
		}
		for key, want := range asMap(body) {
			got, ok, err := iotVar(key, conn)
			if err != nil {
				return false, err
			}
			if !ok || !strings.EqualFold(got, fmt.Sprint(want)) {
				return false, nil
			}
		}
	}
	return true, nil
}
