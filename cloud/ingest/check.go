package ingest

import (
	"encoding/json"
	"time"
)

// DefaultMaxFutureSkew is Config.MaxFutureSkew's default: how far after
// receipt a device timestamp may lie.
const DefaultMaxFutureSkew = 5 * time.Minute

// CheckDeviceData checks data, the payload of a device event of type typ,
// against the schema ingest applies to every device message (fields,
// kinds, bounds; timestamps at most DefaultMaxFutureSkew after now), so a
// tool that emits device events by hand (`bowline emit`) writes nothing
// ingest would refuse. known is false when typ is not a device event type.
func CheckDeviceData(typ string, data json.RawMessage, now time.Time) (known bool, err error) {
	s, ok := schemas[typ]
	if !ok {
		return false, nil
	}
	return true, s.check(data, now, DefaultMaxFutureSkew)
}
