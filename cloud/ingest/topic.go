package ingest

import (
	"github.com/bowline-iot/bowline/edge/wire"
)

// ParseTopic parses a data topic (wire.KindTelemetry or wire.KindEvents), or
// rejects it with ReasonBadTopic: another prefix or kind, or a tenant or
// thing that is not a wire.ValidName.
func ParseTopic(topic string) (wire.Topic, error) {
	t, err := wire.ParseTopic(topic)
	if err != nil {
		return wire.Topic{}, reject(ReasonBadTopic, "%v", err)
	}
	if t.Kind != wire.KindTelemetry && t.Kind != wire.KindEvents {
		return wire.Topic{}, reject(ReasonBadTopic, "topic %q: kind %q is not ingested; want telemetry or events", topic, t.Kind)
	}
	return t, nil
}

// Filters returns the shared-subscription filters of group.
func Filters(group string) []string {
	return []string{
		"$share/" + group + "/" + wire.Filter(wire.KindTelemetry),
		"$share/" + group + "/" + wire.Filter(wire.KindEvents),
	}
}
