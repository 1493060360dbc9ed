package rules

import (
	"fmt"
	"strings"
)

// ParseSQL reads a statement of the form Spec.SQL writes,
// SELECT <expr> AS <name>, ... FROM '<filter>', back into its SELECT list
// and FROM filter. Anything else (WHERE, SET, '*' alone, nested calls
// other than encode(*, 'base64')) is refused with ErrBadSQL: the stand-in
// could not evaluate it.
func ParseSQL(sql string) (from string, items []Item, err error) {
	rest, ok := cutWord(strings.TrimSpace(sql), "SELECT")
	if !ok {
		return "", nil, fmt.Errorf("%w: %q: want SELECT ... FROM '<filter>'", ErrBadSQL, sql)
	}
	i := lastIndexFold(rest, " FROM ")
	if i < 0 {
		return "", nil, fmt.Errorf("%w: %q: no FROM", ErrBadSQL, sql)
	}
	list, tail := rest[:i], strings.TrimSpace(rest[i+len(" FROM "):])
	if len(tail) < 2 || tail[0] != '\'' || tail[len(tail)-1] != '\'' || strings.Count(tail, "'") != 2 {
		return "", nil, fmt.Errorf("%w: %q: want FROM '<filter>' and nothing after it", ErrBadSQL, sql)
	}
	from = tail[1 : len(tail)-1]
	for _, part := range splitTop(list) {
		expr, name, ok := cutAS(part)
		if !ok {
			return "", nil, fmt.Errorf("%w: %q: item %q: want <expression> AS <name>", ErrBadSQL, sql, part)
		}
		e, err := ParseExpr(expr)
		if err != nil {
			return "", nil, fmt.Errorf("%q: %w", sql, err)
		}
		items = append(items, Item{Name: name, Expr: e})
	}
	return from, items, nil
}

// lastIndexFold is the last index of word in s, ASCII letters matched in
// either case (strings.ToUpper would change byte offsets of invalid UTF-8).
func lastIndexFold(s, word string) int {
	for i := len(s) - len(word); i >= 0; i-- {
		if asciiEqualFold(s[i:i+len(word)], word) {
			return i
		}
	}
	return -1
}

func asciiEqualFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// cutWord cuts a leading keyword (any case) followed by a space.
func cutWord(s, word string) (string, bool) {
	if len(s) <= len(word) || !asciiEqualFold(s[:len(word)], word) || s[len(word)] != ' ' {
		return "", false
	}
	return strings.TrimSpace(s[len(word):]), true
}

// splitTop splits a SELECT list at the commas outside parentheses and
// quotes.
func splitTop(list string) []string {
	var parts []string
	depth, quoted, start := 0, false, 0
	for i, r := range list {
		switch {
		case r == '\'':
			quoted = !quoted
		case quoted:
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == ',' && depth == 0:
			parts = append(parts, strings.TrimSpace(list[start:i]))
			start = i + 1
		}
	}
	return append(parts, strings.TrimSpace(list[start:]))
}

// cutAS splits "<expr> AS <name>" at its last AS.
func cutAS(item string) (expr, name string, ok bool) {
	i := lastIndexFold(item, " AS ")
	if i < 0 {
		return "", "", false
	}
	expr, name = strings.TrimSpace(item[:i]), strings.TrimSpace(item[i+len(" AS "):])
	if expr == "" || !namePattern.MatchString(name) {
		return "", "", false
	}
	return expr, name, true
}
