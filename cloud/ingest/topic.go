package ingest

import (
	"strings"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/engine"
)

// Message kinds: the last topic segment.
const (
	KindTelemetry = "telemetry"
	KindEvents    = "events"
)

// Topic is a parsed data topic dt/bowline/<tenant>/<thing>/<kind>.
type Topic struct {
	Tenant, Thing, Kind string
}

// ParseTopic parses a data topic, or rejects it with ReasonBadTopic.
func ParseTopic(topic string) (Topic, error) {
	parts := strings.Split(topic, "/")
	if len(parts) != 5 || parts[0] != "dt" || parts[1] != "bowline" {
		return Topic{}, reject(ReasonBadTopic, "topic %q: want dt/bowline/<tenant>/<thing>/<telemetry|events>", topic)
	}
	t := Topic{Tenant: parts[2], Thing: parts[3], Kind: parts[4]}
	switch {
	case !engine.ValidTenant(t.Tenant):
		return Topic{}, reject(ReasonBadTopic, "topic %q: invalid tenant %q", topic, t.Tenant)
	case !devices.ValidThing(t.Thing):
		return Topic{}, reject(ReasonBadTopic, "topic %q: invalid thing %q", topic, t.Thing)
	case t.Kind != KindTelemetry && t.Kind != KindEvents:
		return Topic{}, reject(ReasonBadTopic, "topic %q: unknown kind %q", topic, t.Kind)
	}
	return t, nil
}

// Filters returns the shared-subscription filters of group.
func Filters(group string) []string {
	return []string{
		"$share/" + group + "/dt/bowline/+/+/" + KindTelemetry,
		"$share/" + group + "/dt/bowline/+/+/" + KindEvents,
	}
}
