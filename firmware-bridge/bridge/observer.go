package bridge

import (
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// Observer observes a bridge (metrics, tests). Methods are called from the
// bridge's goroutines and must not block. Embed NopObserver to implement a
// subset.
type Observer interface {
	// FrameDropped: an invalid frame (a frame.Reason label) or a valid one
	// the bridge cannot use ("before_hello", "unexpected_type").
	FrameDropped(reason string)
	// SequenceGap: a frame arrived after a hole; it was dropped and a
	// resend requested.
	SequenceGap(device string, want, got uint32)
	// Duplicate: a frame the bridge already accepted came again.
	Duplicate(device string, seq uint32)
	// Delivered: the sink confirmed a batch.
	Delivered(device string, records int, took time.Duration)
	// DeliverFailed: the sink returned an error; the batch will be retried.
	DeliverFailed(device string, err error)
	// AckSent: a cumulative ack went to the MCU.
	AckSent(device string, cumulative uint32, resend bool)
	// ClockOffset: the uptime-to-wall offset was re-estimated from a time
	// sync whose round trip took rtt.
	ClockOffset(device string, offset, rtt time.Duration)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

func (NopObserver) FrameDropped(string)                              {}
func (NopObserver) SequenceGap(string, uint32, uint32)               {}
func (NopObserver) Duplicate(string, uint32)                         {}
func (NopObserver) Delivered(string, int, time.Duration)             {}
func (NopObserver) DeliverFailed(string, error)                      {}
func (NopObserver) AckSent(string, uint32, bool)                     {}
func (NopObserver) ClockOffset(string, time.Duration, time.Duration) {}

var _ Observer = NopObserver{}

// Drop reasons the bridge adds to frame.Reason labels.
const (
	DropBeforeHello    = "before_hello"
	DropUnexpectedType = "unexpected_type"
)

func decodeReason(r frame.Reason) string { return r.String() }
