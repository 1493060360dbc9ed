package cfn

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Problem is one thing Check found wrong, at a dotted path in the template
// ("Resources.EventsQueue.Properties.RedrivePolicy").
type Problem struct {
	Path string
	Msg  string
}

func (p Problem) String() string { return p.Path + ": " + p.Msg }

// pseudoParams are the pseudo parameters Ref and Fn::Sub accept.
var pseudoParams = map[string]bool{
	"AWS::AccountId": true, "AWS::NotificationARNs": true, "AWS::NoValue": true, "AWS::Partition": true,
	"AWS::Region": true, "AWS::StackId": true, "AWS::StackName": true, "AWS::URLSuffix": true,
}

// Check validates t against the specification: every resource type and
// property exists, required properties are present, values have the
// specified shape, and every Ref, Fn::GetAtt, ${} of Fn::Sub, condition
// and DependsOn resolves. Problems come sorted by path.
func Check(t *Template, s *Spec) []Problem {
	c := &checker{t: t, s: s}
	for _, name := range t.ResourceNames("") {
		c.resource(name, t.Resources[name])
	}
	c.refs("Resources", t.Raw["Resources"])
	c.refs("Outputs", t.Raw["Outputs"])
	c.refs("Conditions", t.Raw["Conditions"])
	sort.SliceStable(c.problems, func(i, j int) bool { return c.problems[i].Path < c.problems[j].Path })
	return c.problems
}

type checker struct {
	t        *Template
	s        *Spec
	problems []Problem
}

func (c *checker) add(path, format string, args ...any) {
	c.problems = append(c.problems, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) resource(name string, r Resource) {
	path := "Resources." + name
	for k := range r.Attributes {
		if !resourceKeys[k] {
			c.add(path, "unknown resource key %q", k)
		}
	}
	if cond, ok := r.Attributes["Condition"]; ok {
		if s, _ := cond.(string); c.t.Conditions[s] == nil {
			c.add(path+".Condition", "condition %v is not defined", cond)
		}
	}
	if d, ok := r.Attributes["DependsOn"]; ok {
		deps, _ := d.([]any)
		if s, ok := d.(string); ok {
			deps = []any{s}
		}
		for _, dep := range deps {
			if s, _ := dep.(string); c.t.Resources[s].Type == "" {
				c.add(path+".DependsOn", "resource %v is not defined", dep)
			}
		}
	}
	rs, ok := c.s.Resources[r.Type]
	if !ok {
		c.add(path+".Type", "resource type %q is not in the specification", r.Type)
		return
	}
	c.properties(path+".Properties", r.Properties, rs.Properties)
}

// properties checks an object's keys and values against its specification.
func (c *checker) properties(path string, got map[string]any, spec map[string]PropertySpec) {
	for _, k := range sortedKeys(got) {
		ps, ok := spec[k]
		if !ok {
			c.add(path+"."+k, "unknown property %q", k)
			continue
		}
		c.value(path+"."+k, got[k], ps.Type)
	}
	for _, k := range sortedKeys(spec) {
		if spec[k].Required {
			if v, ok := got[k]; !ok || isNoValue(v) {
				c.add(path, "required property %q is missing", k)
			}
		}
	}
}

// value checks one value against its type.
func (c *checker) value(path string, v any, t TypeSpec) {
	if fn, arg, ok := intrinsicCall(v); ok {
		if fn == "Fn::If" {
			if l, ok := arg.([]any); ok && len(l) == 3 {
				for i, branch := range l[1:] {
					if !isNoValue(branch) {
						c.value(fmt.Sprintf("%s.Fn::If[%d]", path, i+1), branch, t)
					}
				}
			}
		}
		return
	}
	switch t.Kind {
	case "json", "":
		return
	case "string", "date-time":
		switch v.(type) {
		case string, int, float64, bool:
		default:
			c.add(path, "want a string; got %s", kind(v))
		}
	case "number", "integer":
		switch x := v.(type) {
		case int, float64:
		case string:
			if _, err := strconv.ParseFloat(x, 64); err != nil {
				c.add(path, "want a number; got %q", x)
			}
		default:
			c.add(path, "want a number; got %s", kind(v))
		}
	case "boolean":
		switch x := v.(type) {
		case bool:
		case string:
			if x != "true" && x != "false" {
				c.add(path, "want a boolean; got %q", x)
			}
		default:
			c.add(path, "want a boolean; got %s", kind(v))
		}
	case "tag":
		m, ok := v.(map[string]any)
		if !ok {
			c.add(path, "want a tag {Key, Value}; got %s", kind(v))
			return
		}
		c.properties(path, m, map[string]PropertySpec{
			"Key": {Type: TypeSpec{Kind: "string"}, Required: true}, "Value": {Type: TypeSpec{Kind: "string"}, Required: true},
		})
	case "ref":
		st, ok := c.s.Struct(t)
		if !ok {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			c.add(path, "want an object (%s); got %s", st.Name, kind(v))
			return
		}
		c.properties(path, m, st.Properties)
	case "array":
		l, ok := v.([]any)
		if !ok {
			c.add(path, "want a list; got %s", kind(v))
			return
		}
		if t.Element != nil {
			for i, e := range l {
				c.value(fmt.Sprintf("%s[%d]", path, i), e, *t.Element)
			}
		}
	case "map":
		m, ok := v.(map[string]any)
		if !ok {
			c.add(path, "want a map; got %s", kind(v))
			return
		}
		if t.Element != nil {
			for _, k := range sortedKeys(m) {
				c.value(path+"."+k, m[k], *t.Element)
			}
		}
	case "union":
		var best []Problem
		for i, member := range t.Types {
			sub := &checker{t: c.t, s: c.s}
			sub.value(path, v, member)
			if len(sub.problems) == 0 {
				return
			}
			if i == 0 || len(sub.problems) < len(best) {
				best = sub.problems
			}
		}
		c.problems = append(c.problems, best...)
	}
}

// refs checks every intrinsic function under v.
func (c *checker) refs(path string, v any) {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			c.refs(fmt.Sprintf("%s[%d]", path, i), e)
		}
	case map[string]any:
		if fn, arg, ok := intrinsicCall(x); ok {
			c.call(path+"."+fn, fn, arg)
		} else if cond, ok := x["Condition"].(string); ok && len(x) == 1 && strings.HasPrefix(path, "Conditions") {
			if c.t.Conditions[cond] == nil {
				c.add(path, "condition %q is not defined", cond)
			}
		}
		for _, k := range sortedKeys(x) {
			c.refs(path+"."+k, x[k])
		}
	}
}

func (c *checker) call(path, fn string, arg any) {
	switch fn {
	case "Ref":
		name, ok := arg.(string)
		if !ok {
			c.add(path, "Ref of %s; want a name", kind(arg))
			return
		}
		if !c.defined(name) {
			c.add(path, "Ref %q resolves to no parameter, resource or pseudo parameter", name)
		}
	case "Fn::GetAtt":
		l, ok := arg.([]any)
		if !ok || len(l) != 2 {
			c.add(path, "want [resource, attribute]")
			return
		}
		res, _ := l[0].(string)
		attr, ok := l[1].(string)
		if !ok {
			return // attribute computed by an intrinsic
		}
		c.getAtt(path, res, attr)
	case "Fn::Sub":
		var s string
		vars := map[string]any{}
		switch x := arg.(type) {
		case string:
			s = x
		case []any:
			if len(x) != 2 {
				c.add(path, "want a string or [string, {vars}]")
				return
			}
			s, _ = x[0].(string)
			vars = asMap(x[1])
		}
		parts, err := ParseSub(s)
		if err != nil {
			c.add(path, "%v", err)
			return
		}
		for _, p := range parts {
			if p.Literal {
				continue
			}
			if _, ok := vars[p.Text]; ok {
				continue
			}
			if res, attr, ok := strings.Cut(p.Text, "."); ok && c.t.Resources[res].Type != "" {
				c.getAtt(path, res, attr)
				continue
			}
			if !c.defined(p.Text) {
				c.add(path, "${%s} resolves to no parameter, resource, attribute or variable", p.Text)
			}
		}
	case "Fn::If":
		l, ok := arg.([]any)
		if !ok || len(l) != 3 {
			c.add(path, "want [condition, then, else]")
			return
		}
		if name, _ := l[0].(string); c.t.Conditions[name] == nil {
			c.add(path, "condition %v is not defined", l[0])
		}
	case "Fn::FindInMap":
		l, ok := arg.([]any)
		if !ok || len(l) != 3 {
			c.add(path, "want [map, key, key]")
			return
		}
		if name, ok := l[0].(string); ok && c.t.Mappings[name] == nil {
			c.add(path, "mapping %q is not defined", name)
		}
	}
}

func (c *checker) getAtt(path, res, attr string) {
	r, ok := c.t.Resources[res]
	if !ok {
		c.add(path, "GetAtt %s.%s: resource %q is not defined", res, attr, res)
		return
	}
	rs, ok := c.s.Resources[r.Type]
	if !ok {
		return // reported on the resource
	}
	if !rs.Attributes[attr] {
		c.add(path, "GetAtt %s.%s: %s has no attribute %q", res, attr, r.Type, attr)
	}
}

func (c *checker) defined(name string) bool {
	if pseudoParams[name] {
		return true
	}
	if _, ok := c.t.Parameters[name]; ok {
		return true
	}
	_, ok := c.t.Resources[name]
	return ok
}

// SubPart is a piece of an Fn::Sub string: literal text, or the name inside
// ${} (a parameter, resource, Resource.Attribute or variable).
type SubPart struct {
	Literal bool
	Text    string
}

// ParseSub splits an Fn::Sub string. ${!x} is the literal text ${x}.
func ParseSub(s string) ([]SubPart, error) {
	var parts []SubPart
	lit := func(t string) {
		if t == "" {
			return
		}
		if n := len(parts); n > 0 && parts[n-1].Literal {
			parts[n-1].Text += t
			return
		}
		parts = append(parts, SubPart{Literal: true, Text: t})
	}
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			lit(s)
			return parts, nil
		}
		lit(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return nil, fmt.Errorf("Fn::Sub %q: unclosed ${", s)
		}
		name := s[i+2 : i+end]
		switch {
		case strings.HasPrefix(name, "!"):
			lit("${" + name[1:] + "}")
		case strings.TrimSpace(name) == "":
			return nil, fmt.Errorf("Fn::Sub %q: empty ${}", s)
		default:
			parts = append(parts, SubPart{Text: strings.TrimSpace(name)})
		}
		s = s[i+end+1:]
	}
}

// intrinsicCall reports whether v is a single-key map holding Ref or an
// Fn:: function.
func intrinsicCall(v any) (fn string, arg any, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || len(m) != 1 {
		return "", nil, false
	}
	for k, a := range m {
		if k == "Ref" || strings.HasPrefix(k, "Fn::") {
			return k, a, true
		}
	}
	return "", nil, false
}

func isNoValue(v any) bool {
	fn, arg, ok := intrinsicCall(v)
	return ok && fn == "Ref" && arg == "AWS::NoValue"
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
