package wire

import (
	"errors"
	"fmt"
	"strings"
)

// Topic kinds: the last segment of a topic.
const (
	// KindTelemetry carries a TelemetryMessage.
	KindTelemetry = "telemetry"
	// KindEvents carries an EventMessage.
	KindEvents = "events"
	// KindStatus carries a retained StatusMessage (the gateway's last will);
	// ingest does not subscribe to it.
	KindStatus = "status"
	// KindBatch carries a binary telemetry batch of every bowl of one
	// gateway (edge/wire/batch), published only through AWS IoT Basic
	// Ingest (BasicIngestTopic), never through the broker.
	KindBatch = "batch"
	// KindAck is the last segment of a gateway's acknowledgement topic
	// (AckTopic), on which the cloud says what is durable.
	KindAck = "ack"
)

// TelemetryRule is the base name of the AWS IoT topic rule that puts
// gateway batches into the telemetry stream; RuleName scopes it by stack.
const TelemetryRule = "telemetry"

// EventsRule is the base name of the AWS IoT topic rule that puts bowl
// events, published by Basic Ingest to
// $aws/rules/<rule>/dt/bowline/<tenant>/<thing>/events, into the events
// stream with the tenant as partition key (docs/events-path.md).
const EventsRule = "events"

// TelemetryV1Rule is the base name of the rule that carries the v1 JSON
// telemetry of gateways not yet upgraded into the same stream.
const TelemetryV1Rule = "telemetry_v1"

// RuleName is the AWS IoT rule name of base in stack: bowline_<stack>_<base>
// with the stack's hyphens written as underscores (rule names allow only
// letters, digits and '_').
func RuleName(stack, base string) string {
	return "bowline_" + strings.ReplaceAll(stack, "-", "_") + "_" + base
}

// BasicIngestPrefix starts every AWS IoT Basic Ingest topic: a message
// published to $aws/rules/<rule>/<topic> goes to rule <rule> only, with no
// broker, no subscriber and no messaging charge.
const BasicIngestPrefix = "$aws/rules/"

// BasicIngestTopic is the topic a gateway publishes t to so that rule
// receives it directly: $aws/rules/<rule>/<t>. A rule sees the topic
// without the prefix (docs/telemetry-path.md).
func BasicIngestTopic(rule string, t Topic) string {
	return BasicIngestPrefix + rule + "/" + t.String()
}

// SplitBasicIngest returns the rule and the inner topic of a Basic Ingest
// topic; ok is false for any other topic.
func SplitBasicIngest(topic string) (rule, inner string, ok bool) {
	rest, ok := strings.CutPrefix(topic, BasicIngestPrefix)
	if !ok {
		return "", "", false
	}
	rule, inner, ok = strings.Cut(rest, "/")
	if !ok || rule == "" || inner == "" {
		return "", "", false
	}
	return rule, inner, true
}

// topicPrefix starts every Bowline topic.
const topicPrefix = "dt/bowline/"

// ErrBadTopic: a topic is not dt/bowline/<tenant>/<thing>/<kind> with valid
// names and a known kind.
var ErrBadTopic = errors.New("not a bowline topic")

// Topic is a topic dt/bowline/<tenant>/<thing>/<kind>.
type Topic struct {
	Tenant, Thing, Kind string
}

// String returns the topic, dt/bowline/<tenant>/<thing>/<kind>. It does not
// check the names: the gateway checks its tenant and things at config load.
func (t Topic) String() string {
	return topicPrefix + t.Tenant + "/" + t.Thing + "/" + t.Kind
}

// Filter is the MQTT subscription filter of kind's topics of every tenant
// and thing: dt/bowline/+/+/<kind>.
func Filter(kind string) string { return topicPrefix + "+/+/" + kind }

// ParseTopic parses a topic of any kind. Its error wraps ErrBadTopic and,
// for a bad tenant or thing, the *NameError.
func ParseTopic(topic string) (Topic, error) {
	parts := strings.Split(topic, "/")
	if len(parts) != 5 || parts[0]+"/"+parts[1]+"/" != topicPrefix {
		return Topic{}, fmt.Errorf("%w: topic %q: want dt/bowline/<tenant>/<thing>/<telemetry|events|status|batch>", ErrBadTopic, topic)
	}
	t := Topic{Tenant: parts[2], Thing: parts[3], Kind: parts[4]}
	if err := CheckName("tenant", t.Tenant); err != nil {
		return Topic{}, fmt.Errorf("%w: topic %q: %w", ErrBadTopic, topic, err)
	}
	if err := CheckName("thing", t.Thing); err != nil {
		return Topic{}, fmt.Errorf("%w: topic %q: %w", ErrBadTopic, topic, err)
	}
	switch t.Kind {
	case KindTelemetry, KindEvents, KindStatus, KindBatch:
		return t, nil
	}
	return Topic{}, fmt.Errorf("%w: topic %q: unknown kind %q; want telemetry, events, status or batch", ErrBadTopic, topic, t.Kind)
}
