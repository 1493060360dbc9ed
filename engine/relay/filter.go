package relay

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Filter is a compiled EventBridge filter pattern.
type Filter struct {
	root *node // nil accepts everything
}

type node struct {
	fields map[string]*node // nested object pattern
	conds  []cond           // leaf: any condition matches
}

type cond struct {
	kind  string // "eq", "prefix", "suffix", "exists", "anything-but"
	value any    // literal for eq; string for prefix/suffix; bool for exists; []any for anything-but
}

// CompileFilter parses an EventBridge filter pattern; "" accepts every
// record. Supported: literal strings, numbers, booleans and null, and
// {"prefix"}, {"suffix"}, {"exists"}, {"anything-but"} (a literal or a list).
func CompileFilter(pattern string) (*Filter, error) {
	if strings.TrimSpace(pattern) == "" {
		return &Filter{}, nil
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(pattern), &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFilter, err)
	}
	n, err := compileObject(raw, "")
	if err != nil {
		return nil, err
	}
	return &Filter{root: n}, nil
}

func compileObject(raw map[string]any, at string) (*node, error) {
	n := &node{fields: map[string]*node{}}
	for k, v := range raw {
		where := at + "." + k
		switch v := v.(type) {
		case map[string]any:
			child, err := compileObject(v, where)
			if err != nil {
				return nil, err
			}
			n.fields[k] = child
		case []any:
			conds, err := compileConds(v, where)
			if err != nil {
				return nil, err
			}
			n.fields[k] = &node{conds: conds}
		default:
			return nil, fmt.Errorf("%s: want an object or an array: %w", where, ErrBadFilter)
		}
	}
	return n, nil
}

func compileConds(vals []any, at string) ([]cond, error) {
	if len(vals) == 0 {
		return nil, fmt.Errorf("%s: empty array: %w", at, ErrBadFilter)
	}
	var out []cond
	for _, v := range vals {
		obj, ok := v.(map[string]any)
		if !ok {
			out = append(out, cond{kind: "eq", value: v})
			continue
		}
		if len(obj) != 1 {
			return nil, fmt.Errorf("%s: want one operator per object: %w", at, ErrBadFilter)
		}
		for op, arg := range obj {
			switch op {
			case "prefix", "suffix":
				s, ok := arg.(string)
				if !ok {
					return nil, fmt.Errorf("%s: %s wants a string: %w", at, op, ErrBadFilter)
				}
				out = append(out, cond{kind: op, value: s})
			case "exists":
				b, ok := arg.(bool)
				if !ok {
					return nil, fmt.Errorf("%s: exists wants a boolean: %w", at, ErrBadFilter)
				}
				out = append(out, cond{kind: op, value: b})
			case "anything-but":
				list, ok := arg.([]any)
				if !ok {
					list = []any{arg}
				}
				out = append(out, cond{kind: op, value: list})
			default:
				return nil, fmt.Errorf("%s: operator %q: %w", at, op, ErrBadFilter)
			}
		}
	}
	return out, nil
}

// Match reports whether the JSON-shaped record matches the pattern.
func (f *Filter) Match(record map[string]any) bool {
	if f == nil || f.root == nil {
		return true
	}
	return matchObject(f.root, record, true)
}

func matchObject(n *node, v any, present bool) bool {
	m, _ := v.(map[string]any)
	for k, child := range n.fields {
		fv, ok := m[k]
		if child.conds != nil {
			if !matchConds(child.conds, fv, ok && present) {
				return false
			}
			continue
		}
		if !ok || !matchObject(child, fv, true) {
			return false
		}
	}
	return true
}

func matchConds(conds []cond, v any, present bool) bool {
	for _, c := range conds {
		if c.kind == "exists" {
			if c.value.(bool) == present {
				return true
			}
			continue
		}
		if !present {
			continue
		}
		// A field holding an array matches when any element does.
		if arr, ok := v.([]any); ok {
			for _, e := range arr {
				if matchOne(c, e) {
					return true
				}
			}
			continue
		}
		if matchOne(c, v) {
			return true
		}
	}
	return false
}

func matchOne(c cond, v any) bool {
	switch c.kind {
	case "eq":
		return equal(c.value, v)
	case "prefix":
		s, ok := v.(string)
		return ok && strings.HasPrefix(s, c.value.(string))
	case "suffix":
		s, ok := v.(string)
		return ok && strings.HasSuffix(s, c.value.(string))
	case "anything-but":
		for _, x := range c.value.([]any) {
			if equal(x, v) {
				return false
			}
		}
		return true
	}
	return false
}

func equal(a, b any) bool {
	switch a := a.(type) {
	case float64:
		switch b := b.(type) {
		case float64:
			return a == b
		case json.Number:
			f, err := b.Float64()
			return err == nil && f == a
		}
		return false
	default:
		return a == b
	}
}
