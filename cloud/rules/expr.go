package rules

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Op is the kind of an Expr: the closed set of AWS IoT SQL expressions
// Bowline's rules use.
type Op int

// The expressions.
const (
	// OpInt is an integer literal (Expr.Int).
	OpInt Op = iota + 1
	// OpTopic is topic(Expr.Level): the level-th segment of the topic the
	// rule sees, counting from 1.
	OpTopic
	// OpTimestamp is timestamp(): the rules engine's clock in Unix
	// milliseconds.
	OpTimestamp
	// OpPayloadBase64 is encode(*, 'base64'): the whole payload, as bytes,
	// in standard base64 with padding.
	OpPayloadBase64
)

// Expr is one expression of a SELECT item or a substitution template.
type Expr struct {
	Op Op
	// Int is OpInt's value.
	Int int64
	// Level is OpTopic's segment, from 1.
	Level int
}

// Int is the integer literal n.
func Int(n int64) Expr { return Expr{Op: OpInt, Int: n} }

// Topic is topic(level).
func Topic(level int) Expr { return Expr{Op: OpTopic, Level: level} }

// Timestamp is timestamp().
func Timestamp() Expr { return Expr{Op: OpTimestamp} }

// PayloadBase64 is encode(*, 'base64').
func PayloadBase64() Expr { return Expr{Op: OpPayloadBase64} }

// String renders e as AWS IoT SQL.
func (e Expr) String() string {
	switch e.Op {
	case OpInt:
		return strconv.FormatInt(e.Int, 10)
	case OpTopic:
		return "topic(" + strconv.Itoa(e.Level) + ")"
	case OpTimestamp:
		return "timestamp()"
	case OpPayloadBase64:
		return "encode(*, 'base64')"
	}
	return fmt.Sprintf("<op %d>", e.Op)
}

// ParseExpr reads one expression of the closed set; whitespace inside
// calls is ignored.
func ParseExpr(s string) (Expr, error) {
	compact := strings.Join(strings.Fields(s), "")
	switch {
	case compact == "timestamp()":
		return Timestamp(), nil
	case compact == "encode(*,'base64')":
		return PayloadBase64(), nil
	case strings.HasPrefix(compact, "topic(") && strings.HasSuffix(compact, ")"):
		n, err := strconv.Atoi(compact[len("topic(") : len(compact)-1])
		if err != nil || n < 1 {
			return Expr{}, fmt.Errorf("%w: expression %q: want topic(<level from 1>)", ErrBadSQL, s)
		}
		return Topic(n), nil
	}
	if n, err := strconv.ParseInt(compact, 10, 64); err == nil {
		return Int(n), nil
	}
	return Expr{}, fmt.Errorf("%w: expression %q: want an integer, topic(n), timestamp() or encode(*, 'base64')", ErrBadSQL, s)
}

// message is what an expression is evaluated against.
type message struct {
	levels  []string // the topic the rule sees, split at '/'
	payload []byte
	now     time.Time
}

// eval returns e's value as a JSON-ready Go value: int64 or string.
func (e Expr) eval(m message) (any, error) {
	switch e.Op {
	case OpInt:
		return e.Int, nil
	case OpTopic:
		if e.Level < 1 || e.Level > len(m.levels) {
			return nil, fmt.Errorf("%w: topic(%d) of a topic with %d levels", ErrBadSpec, e.Level, len(m.levels))
		}
		return m.levels[e.Level-1], nil
	case OpTimestamp:
		return m.now.UnixMilli(), nil
	case OpPayloadBase64:
		return base64.StdEncoding.EncodeToString(m.payload), nil
	}
	return nil, fmt.Errorf("%w: unknown expression op %d", ErrBadSpec, e.Op)
}

// Template renders e as an action substitution template: ${<expr>}.
func (e Expr) Template() string { return "${" + e.String() + "}" }

// ParseTemplate reads a substitution template that is exactly one
// expression, "${<expr>}".
func ParseTemplate(s string) (Expr, error) {
	inner, ok := strings.CutPrefix(s, "${")
	inner, ok2 := strings.CutSuffix(inner, "}")
	if !ok || !ok2 || strings.ContainsAny(inner, "${}") {
		return Expr{}, fmt.Errorf("%w: %q: want ${<expression>}", ErrBadTemplate, s)
	}
	e, err := ParseExpr(inner)
	if err != nil {
		return Expr{}, fmt.Errorf("%w: %q: %w", ErrBadTemplate, s, err)
	}
	return e, nil
}
