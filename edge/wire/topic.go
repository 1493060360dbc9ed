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
)

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
		return Topic{}, fmt.Errorf("%w: topic %q: want dt/bowline/<tenant>/<thing>/<telemetry|events|status>", ErrBadTopic, topic)
	}
	t := Topic{Tenant: parts[2], Thing: parts[3], Kind: parts[4]}
	if err := CheckName("tenant", t.Tenant); err != nil {
		return Topic{}, fmt.Errorf("%w: topic %q: %w", ErrBadTopic, topic, err)
	}
	if err := CheckName("thing", t.Thing); err != nil {
		return Topic{}, fmt.Errorf("%w: topic %q: %w", ErrBadTopic, topic, err)
	}
	switch t.Kind {
	case KindTelemetry, KindEvents, KindStatus:
		return t, nil
	}
	return Topic{}, fmt.Errorf("%w: topic %q: unknown kind %q; want telemetry, events or status", ErrBadTopic, topic, t.Kind)
}
