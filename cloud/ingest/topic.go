package ingest

import (
	"github.com/bowline-iot/bowline/edge/wire"
)

// ParseTopic parses an events topic (wire.KindEvents), or rejects it with
// ReasonBadTopic: another prefix or kind, or a tenant or thing that is not
// a wire.ValidName. Telemetry is not ingested here: it reaches Kinesis
// through the topic rules (docs/telemetry-path.md).
func ParseTopic(topic string) (wire.Topic, error) {
	t, err := wire.ParseTopic(topic)
	if err != nil {
		return wire.Topic{}, reject(ReasonBadTopic, "%v", err)
	}
	if t.Kind != wire.KindEvents {
		return wire.Topic{}, reject(ReasonBadTopic, "topic %q: kind %q is not ingested; want events", topic, t.Kind)
	}
	return t, nil
}
