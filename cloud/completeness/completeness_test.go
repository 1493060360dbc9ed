package completeness

import (
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/engine"
)

// Drops and ring refusals count on the day of the bowl's clock, for the
// thing asked about only; a drop stamped the day after, another bowl's
// drop and a fault that is not a ring overflow do not count.
func TestFromEvents(t *testing.T) {
	day := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
	ev := func(typ string, p map[string]any) engine.Envelope {
		// occurred_at is the wall clock (2026): it must not decide the day.
		return engine.Envelope{Type: typ, OccurredAt: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), Payload: p}
	}
	envs := []engine.Envelope{
		ev(catalog.TypeTelemetryDropped, map[string]any{"thing": "b1", "from_seq": 51.0, "to_seq": 60.0, "count": 10.0, "reason": "disk_cap", "to": "2030-06-01T10:00:00Z"}),
		ev(catalog.TypeTelemetryDropped, map[string]any{"thing": "b1", "from_seq": 200.0, "to_seq": 209.0, "count": 10.0, "reason": "ttl", "to": "2030-06-02T00:00:01Z"}),
		ev(catalog.TypeTelemetryDropped, map[string]any{"thing": "b2", "from_seq": 1.0, "to_seq": 5.0, "count": 5.0, "reason": "ttl", "to": "2030-06-01T10:00:00Z"}),
		ev(catalog.TypeDeviceFault, map[string]any{"thing": "b1", "code": 4.0, "detail": "17 readings refused: ring full", "device_at": "2030-06-01T11:00:00Z"}),
		ev(catalog.TypeDeviceFault, map[string]any{"thing": "b1", "code": 1.0, "detail": "load cell", "device_at": "2030-06-01T11:00:00Z"}),
	}
	drops, refused := FromEvents(envs, "b1", day)
	if len(drops) != 1 || drops[0] != (durable.Drop{FromSeq: 51, ToSeq: 60, Reason: "disk_cap"}) || refused != 17 {
		t.Fatalf("FromEvents = %+v, %d; want [51..60 disk_cap], 17", drops, refused)
	}
}
