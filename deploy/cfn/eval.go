package cfn

import (
	"fmt"
	"strings"
)

// Env gives values to names when a string is evaluated: parameters, pseudo
// parameters (AWS::Region, ...), "Resource" for a Ref and
// "Resource.Attribute" for a GetAtt. A name absent from Env is an error.
type Env map[string]string

// EvalString evaluates a string-valued expression: a literal, Ref, Fn::GetAtt,
// Fn::Sub (with ${!x} escapes) or Fn::Join over those (its list literal,
// or an Fn::Split of one of them).
func EvalString(v any, env Env) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int, float64, bool:
		return fmt.Sprint(x), nil
	}
	fn, arg, ok := intrinsicCall(v)
	if !ok {
		return "", fmt.Errorf("evaluate %s: %w", kind(v), ErrUnsupported)
	}
	lookup := func(name string) (string, error) {
		val, ok := env[name]
		if !ok {
			return "", fmt.Errorf("evaluate %s: %q has no value", fn, name)
		}
		return val, nil
	}
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		return lookup(name)
	case "Fn::GetAtt":
		l, _ := arg.([]any)
		if len(l) != 2 {
			return "", fmt.Errorf("evaluate Fn::GetAtt %v: %w", arg, ErrUnsupported)
		}
		return lookup(fmt.Sprintf("%v.%v", l[0], l[1]))
	case "Fn::Sub":
		s, ok := arg.(string)
		if !ok {
			return "", fmt.Errorf("evaluate Fn::Sub with variables: %w", ErrUnsupported)
		}
		parts, err := ParseSub(s)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Literal {
				b.WriteString(p.Text)
				continue
			}
			val, err := lookup(p.Text)
			if err != nil {
				return "", err
			}
			b.WriteString(val)
		}
		return b.String(), nil
	case "Fn::Join":
		l, _ := arg.([]any)
		if len(l) != 2 {
			return "", fmt.Errorf("evaluate Fn::Join %v: %w", arg, ErrUnsupported)
		}
		sep, _ := l[0].(string)
		items, err := evalList(l[1], env)
		if err != nil {
			return "", err
		}
		out := make([]string, 0, len(items))
		for _, it := range items {
			s, err := EvalString(it, env)
			if err != nil {
				return "", err
			}
			out = append(out, s)
		}
		return strings.Join(out, sep), nil
	}
	return "", fmt.Errorf("evaluate %s: %w", fn, ErrUnsupported)
}

// evalList evaluates a list: a literal, or Fn::Split [sep, string].
func evalList(v any, env Env) ([]any, error) {
	if l, ok := v.([]any); ok {
		return l, nil
	}
	fn, arg, ok := intrinsicCall(v)
	if !ok || fn != "Fn::Split" {
		return nil, fmt.Errorf("evaluate a list computed by %s: %w", kind(v), ErrUnsupported)
	}
	l, _ := arg.([]any)
	if len(l) != 2 {
		return nil, fmt.Errorf("evaluate Fn::Split %v: %w", arg, ErrUnsupported)
	}
	sep, _ := l[0].(string)
	s, err := EvalString(l[1], env)
	if err != nil {
		return nil, err
	}
	var out []any
	for _, p := range strings.Split(s, sep) {
		out = append(out, p)
	}
	return out, nil
}

// RefersTo reports whether v mentions resource (or parameter) name through
// Ref, Fn::GetAtt or a ${name} / ${name.Attr} of Fn::Sub, at any depth.
func RefersTo(v any, name string) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if RefersTo(e, name) {
				return true
			}
		}
	case map[string]any:
		if fn, arg, ok := intrinsicCall(x); ok {
			switch fn {
			case "Ref":
				if arg == name {
					return true
				}
			case "Fn::GetAtt":
				if l, ok := arg.([]any); ok && len(l) == 2 && l[0] == name {
					return true
				}
			case "Fn::Sub":
				s, _ := arg.(string)
				if l, ok := arg.([]any); ok && len(l) > 0 {
					s, _ = l[0].(string)
				}
				parts, _ := ParseSub(s)
				for _, p := range parts {
					if !p.Literal && (p.Text == name || strings.HasPrefix(p.Text, name+".")) {
						return true
					}
				}
			}
		}
		for _, e := range x {
			if RefersTo(e, name) {
				return true
			}
		}
	}
	return false
}
