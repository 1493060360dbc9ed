package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/resources"
)

// SQLVersion is the AWS IoT SQL version of every rule. AWS uses
// 2015-10-08 when a rule names none (CloudFormation included), so the
// template always sets it.
const SQLVersion = "2016-03-23"

// RecordVersion is the "v" of the Kinesis record the rules write (record
// format 2, docs/telemetry-path.md).
const RecordVersion = 2

// LegacyParameter is the template parameter that turns the v1 rule on
// ("true" until the cut-over in docs/telemetry-path.md).
const LegacyParameter = "LegacyTelemetryV1"

// Item is one item of a SELECT list: Expr AS Name.
type Item struct {
	Name string
	Expr Expr
}

// Spec is one AWS IoT topic rule with a Kinesis action and an SQS error
// action, as data shared by the CloudFormation template and the stand-in.
type Spec struct {
	// Base is the rule's base name (wire.TelemetryRule, ...); Name gives the
	// stack's rule name.
	Base string
	// From is the FROM topic filter, as the rule sees topics: without the
	// Basic Ingest prefix $aws/rules/<rule>/.
	From string
	// Select is the SELECT list; the record is a JSON object of these
	// items, in this order.
	Select []Item
	// PartitionKey is the Kinesis action's partition key, rendered as the
	// substitution template ${<expr>}.
	PartitionKey Expr
	// Broker says gateways also reach the rule through the message broker
	// on From (their IoT policy allows publishing there). Otherwise they
	// reach it only by Basic Ingest.
	Broker bool
	// Parameter, when set, is the template parameter whose value "true"
	// enables the rule; otherwise the rule is always enabled.
	Parameter string
}

// selectList is the SELECT of every rule: record format 2.
var selectList = []Item{
	{"v", Int(RecordVersion)},
	{"tenant", Topic(3)},
	{"gateway", Topic(4)},
	{"received_at", Timestamp()},
	{"payload", PayloadBase64()},
}

// Telemetry puts every gateway batch, published by Basic Ingest to
// $aws/rules/<rule>/dt/bowline/<tenant>/<gw>/batch, into the telemetry
// stream with the gateway as partition key.
var Telemetry = Spec{
	Base:         wire.TelemetryRule,
	From:         wire.Filter(wire.KindBatch),
	Select:       selectList,
	PartitionKey: Topic(4),
}

// TelemetryV1 puts the v1 JSON telemetry of gateways not yet upgraded,
// published through the broker on dt/bowline/<tenant>/<thing>/telemetry,
// into the same stream in the same record format. It is on while the
// template's LegacyTelemetryV1 parameter is "true". Its topics are not
// stack-scoped, so only one stack per account may turn it on.
var TelemetryV1 = Spec{
	Base:         wire.TelemetryV1Rule,
	From:         wire.Filter(wire.KindTelemetry),
	Select:       selectList,
	PartitionKey: Topic(4),
	Broker:       true,
	Parameter:    LegacyParameter,
}

// Events puts every bowl event, published by Basic Ingest to
// $aws/rules/<rule>/dt/bowline/<tenant>/<thing>/events, into the events
// stream with the tenant as partition key: a tenant's events stay in order
// on one shard, so one consumer keeps its chain head warm
// (docs/events-path.md). The record is format 2 as telemetry's; its
// "gateway" is topic(4), the thing (<gw> or <gw>:<bowl>).
//
// Broker: v1 gateways still publish events through the broker on
// dt/bowline/<tenant>/<thing>/events, which this rule's FROM matches in
// AWS, so they reach the same stream until the cut-over
// (docs/events-path.md, "Cut-over"); the stand-in subscribes to From for
// them unless told the cut-over is done (WithoutBroker).
var Events = Spec{
	Base:         wire.EventsRule,
	From:         wire.Filter(wire.KindEvents),
	Select:       selectList,
	PartitionKey: Topic(3),
	Broker:       true,
}

// All returns every rule the template defines and the stand-in runs.
func All() []Spec { return []Spec{Telemetry, TelemetryV1, Events} }

// WithoutBroker returns s reached by Basic Ingest only: the stand-in of a
// stack past the rule's v1 cut-over, whose IoT policy no longer lets
// gateways publish on From.
func (s Spec) WithoutBroker() Spec {
	s.Broker = false
	return s
}

// ByBase returns the rule of base name base.
func ByBase(base string) (Spec, bool) {
	for _, s := range All() {
		if s.Base == base {
			return s, true
		}
	}
	return Spec{}, false
}

// Name is the rule's name in stack: bowline_<stack>_<base>.
func (s Spec) Name(stack string) string { return wire.RuleName(stack, s.Base) }

// SQL renders the rule's statement:
// SELECT <expr> AS <name>, ... FROM '<filter>'.
func (s Spec) SQL() string {
	items := make([]string, len(s.Select))
	for i, it := range s.Select {
		items[i] = it.Expr.String() + " AS " + it.Name
	}
	return "SELECT " + strings.Join(items, ", ") + " FROM '" + s.From + "'"
}

// Stream is the Kinesis action's stream in a stack: the events stream for
// the events rule (the template's EventsStream), the telemetry stream for
// the others (TelemetryStream).
func (s Spec) Stream(n resources.Names) string {
	if s.Base == wire.EventsRule {
		return n.EventsStream()
	}
	return n.TelemetryStream()
}

// ErrorQueue is the error action's SQS queue in a stack: rule-errors (the
// template's RuleErrorsQueue), already provisioned, shared by every rule.
func (Spec) ErrorQueue(n resources.Names) string { return n.RuleErrorsQueue() }

// BasicIngestFilter is the MQTT filter of the rule's Basic Ingest topics
// in stack: $aws/rules/<name>/<From>.
func (s Spec) BasicIngestFilter(stack string) string {
	return wire.BasicIngestPrefix + s.Name(stack) + "/" + s.From
}

// Subscriptions are the MQTT filters the stand-in subscribes to for the
// rule: its Basic Ingest filter and, for a Broker rule, From. A '#' or '+'
// first level never matches a topic starting with '$' (MQTT 3.1.1 4.7.2),
// so the Basic Ingest topics are named explicitly.
func (s Spec) Subscriptions(stack string) []string {
	subs := []string{s.BasicIngestFilter(stack)}
	if s.Broker {
		subs = append(subs, s.From)
	}
	return subs
}

var namePattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Validate checks that Evaluate can run the spec: a base name AWS allows,
// a FROM filter, SELECT names that are plain and unique, topic levels
// inside the filter, and a partition key that is a topic level.
func (s Spec) Validate() error {
	if !namePattern.MatchString(s.Base) {
		return fmt.Errorf("%w: base name %q: want letters, digits and '_'", ErrBadSpec, s.Base)
	}
	if s.From == "" || strings.ContainsAny(s.From, "'#$") {
		return fmt.Errorf("%w: rule %s: FROM %q: want a topic filter without ', # or $", ErrBadSpec, s.Base, s.From)
	}
	levels := len(strings.Split(s.From, "/"))
	if len(s.Select) == 0 {
		return fmt.Errorf("%w: rule %s: empty SELECT", ErrBadSpec, s.Base)
	}
	seen := map[string]bool{}
	for _, it := range s.Select {
		if !namePattern.MatchString(it.Name) || seen[it.Name] {
			return fmt.Errorf("%w: rule %s: SELECT name %q: want a unique plain name", ErrBadSpec, s.Base, it.Name)
		}
		seen[it.Name] = true
		if err := s.checkExpr(it.Expr, levels); err != nil {
			return fmt.Errorf("%w: rule %s: %s: %w", ErrBadSpec, s.Base, it.Name, err)
		}
	}
	if err := s.checkExpr(s.PartitionKey, levels); err != nil {
		return fmt.Errorf("%w: rule %s: partition key: %w", ErrBadSpec, s.Base, err)
	}
	if s.PartitionKey.Op != OpTopic {
		return fmt.Errorf("%w: rule %s: partition key %s: want a topic level", ErrBadSpec, s.Base, s.PartitionKey)
	}
	return nil
}

// checkExpr checks that e is of the closed set and, for topic(n), that n
// is a level of a topic the filter matches.
func (s Spec) checkExpr(e Expr, levels int) error {
	switch e.Op {
	case OpInt, OpTimestamp, OpPayloadBase64:
		return nil
	case OpTopic:
		if e.Level < 1 || e.Level > levels {
			return fmt.Errorf("topic(%d) outside the %d levels of %q", e.Level, levels, s.From)
		}
		return nil
	}
	return fmt.Errorf("unknown expression op %d", e.Op)
}

// Evaluate runs the rule on one message as AWS IoT would: topic is the
// topic the rule sees (without the Basic Ingest prefix), now the rules
// engine's clock. It returns the Kinesis record (a JSON object of the
// SELECT items, in order) and the partition key. The error wraps
// ErrNoMatch when topic does not match From.
func (s Spec) Evaluate(topic string, payload []byte, now time.Time) (record []byte, partitionKey string, err error) {
	if err := s.Validate(); err != nil {
		return nil, "", err
	}
	if !Match(s.From, topic) {
		return nil, "", fmt.Errorf("rule %s: topic %q, filter %q: %w", s.Base, topic, s.From, ErrNoMatch)
	}
	m := message{levels: strings.Split(topic, "/"), payload: payload, now: now}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, it := range s.Select {
		v, err := it.Expr.eval(m)
		if err != nil {
			return nil, "", fmt.Errorf("rule %s: %s: %w", s.Base, it.Name, err)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(it.Name)
		val, err := json.Marshal(v)
		if err != nil {
			return nil, "", fmt.Errorf("rule %s: %s: %w", s.Base, it.Name, err)
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(val)
	}
	buf.WriteByte('}')
	key, err := s.PartitionKey.eval(m)
	if err != nil {
		return nil, "", fmt.Errorf("rule %s: partition key: %w", s.Base, err)
	}
	return buf.Bytes(), fmt.Sprint(key), nil
}

// Match reports whether MQTT topic filter filter matches topic ('+' one
// level, a final '#' any number of levels, including none).
func Match(filter, topic string) bool {
	fs, ts := strings.Split(filter, "/"), strings.Split(topic, "/")
	for i, f := range fs {
		if f == "#" && i == len(fs)-1 {
			return true
		}
		if i >= len(ts) {
			return false
		}
		if f != "+" && f != ts[i] {
			return false
		}
	}
	return len(fs) == len(ts)
}
