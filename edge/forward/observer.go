package forward

import (
	"time"

	"github.com/bowline-iot/bowline/edge/outbox"
)

// Observer is told what the forwarder does (metrics: status.Metrics).
// Calls come from the forwarder's goroutines and must not block. Embed
// NopObserver to observe only some calls.
type Observer interface {
	// Published is called per message sent: its lane and record count.
	Published(lane outbox.Lane, records int)
	// Acked is called per PUBACK with the time since the publish.
	Acked(lane outbox.Lane, records int, rtt time.Duration)
	// Connection is called when the connection goes up or down.
	Connection(up bool)
	// PubackTimeout is called when a publish got no PUBACK within
	// Config.PubackTimeout (the session then ends).
	PubackTimeout(lane outbox.Lane)
	// CloudAck is called per cloud acknowledgement (wire v2): whether it
	// was applied and how many records it removed.
	CloudAck(applied bool, removed int)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Published(outbox.Lane, int)            {}
func (NopObserver) Acked(outbox.Lane, int, time.Duration) {}
func (NopObserver) Connection(bool)                       {}
func (NopObserver) PubackTimeout(outbox.Lane)             {}
func (NopObserver) CloudAck(bool, int)                    {}
