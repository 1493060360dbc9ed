package relay

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Filter is a compiled list of EventBridge filter patterns: a record
// passes when it matches any of them (a Pipe's FilterCriteria.Filters).
type Filter struct {
	roots []*node // empty accepts everything
}

type node struct {
	fields map[string]*node // nested object pattern
	conds  []cond           // leaf: any condition matches
}

type cond struct {
	kind  string // "eq", "eq-fold", "prefix", "prefix-fold", "suffix", "exists", "anything-but"
	value any    // literal for eq; string for eq-fold, prefix(-fold) and suffix; bool for exists; []any for anything-but
}

// MaxFilters and MaxPatternLen are the Pipes' limits on FilterCriteria: at
// most 5 filters, each pattern at most 4,096 characters (the Pipes API
// reference, Filter and FilterCriteria). Validate refuses more, so a spec
// the relay accepts is one CloudFormation accepts too.
const (
	MaxFilters    = 5
	MaxPatternLen = 4096
)

// CompileFilter parses an EventBridge filter pattern; "" accepts every
// record. Supported (all of them operators the Pipes support, per
// EventBridge's comparison-operator table): literal strings, numbers,
// booleans and null, and {"prefix"} (a string, or {"equals-ignore-case"}),
// {"suffix"}, {"equals-ignore-case"}, {"exists"}, {"anything-but"} (a
// literal or a list). Not supported, and refused: numeric, cidr, wildcard,
// $or and the anything-but forms that the Pipes do not support (prefix,
// suffix, ignore case); more filters give an OR instead (CompileFilters).
func CompileFilter(pattern string) (*Filter, error) {
	if strings.TrimSpace(pattern) == "" {
		return &Filter{}, nil
	}
	return CompileFilters([]string{pattern})
}

// CompileFilters compiles several patterns into one Filter that passes a
// record matching any of them, as a Pipe with several FilterCriteria
// Filters does; none accepts every record.
func CompileFilters(patterns []string) (*Filter, error) {
	if len(patterns) > MaxFilters {
		return nil, fmt.Errorf("%d patterns, more than a Pipe's %d: %w", len(patterns), MaxFilters, ErrBadFilter)
	}
	f := &Filter{}
	for i, pattern := range patterns {
		if len(pattern) > MaxPatternLen {
			return nil, fmt.Errorf("pattern %d is %d characters, more than a Pipe's %d: %w", i, len(pattern), MaxPatternLen, ErrBadFilter)
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(pattern), &raw); err != nil {
			return nil, fmt.Errorf("pattern %d: %w: %v", i, ErrBadFilter, err)
		}
		n, err := compileObject(raw, "")
		if err != nil {
			return nil, err
		}
		f.roots = append(f.roots, n)
	}
	return f, nil
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
			case "prefix", "suffix", "equals-ignore-case":
				kind := op
				s, ok := arg.(string)
				if m, isObj := arg.(map[string]any); isObj && op == "prefix" && len(m) == 1 {
					s, ok = m["equals-ignore-case"].(string)
					kind = "prefix-fold"
				}
				if !ok {
					return nil, fmt.Errorf("%s: %s wants a string: %w", at, op, ErrBadFilter)
				}
				if op == "equals-ignore-case" {
					kind = "eq-fold"
				}
				out = append(out, cond{kind: kind, value: s})
			case "exists":
				b, ok := arg.(bool)
				if !ok {
					return nil, fmt.Errorf("%s: exists wants a boolean: %w", at, ErrBadFilter)
				}
				out = append(out, cond{kind: op, value: b})
			case "anything-but":
				if _, ok := arg.(map[string]any); ok {
					return nil, fmt.Errorf("%s: anything-but with an operator (the Pipes support only literals): %w", at, ErrBadFilter)
				}
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
	if f == nil || len(f.roots) == 0 {
		return true
	}
	for _, root := range f.roots {
		if matchObject(root, record, true) {
			return true
		}
	}
	return false
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
	case "eq-fold":
		s, ok := v.(string)
		return ok && strings.EqualFold(s, c.value.(string))
	case "prefix-fold":
		s, ok := v.(string)
		p := c.value.(string)
		return ok && len(s) >= len(p) && strings.EqualFold(s[:len(p)], p)
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
