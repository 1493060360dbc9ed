package bridge

import (
	"context"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// Record is one decoded MCU frame that carries data.
type Record struct {
	// Device is the device id from the link's Hello frame.
	Device string
	// Epoch is the boot epoch of the link's last Hello: it names the MCU's
	// sequence counter (0 for a firmware that sends none). A sink keys
	// dedup by (Device, Epoch, Seq); a new Epoch means Seq restarted.
	Epoch uint32
	// Seq is the MCU's per-device 32-bit sequence number; it wraps (see the
	// package doc for how a sink compares them).
	Seq uint32
	// Uptime is the device uptime of the reading, unwrapped past the 32-bit
	// millisecond counter's 49.7-day wrap within one Run.
	Uptime time.Duration
	// At is Uptime mapped to the gateway's wall clock via time sync.
	At time.Time
	// Body is the typed body: frame.WeightBatch, frame.Temperature,
	// frame.Battery, frame.TagSeen, frame.Lid or frame.Fault.
	Body frame.Body
}

// Sink makes records durable. Deliver returns nil only when every record in
// the batch is durable; only then does the bridge send the cumulative ack.
// It may be called from one goroutine per device (one per Run), never
// concurrently for one device. Records of one device arrive in order and
// gap-free within a Run and an Epoch; after a restart already-delivered
// records may come again, so the Sink deduplicates by (Device, Epoch, Seq)
// as the package doc says.
// Deliver should honour ctx; the batch slice is not reused by the bridge.
type Sink interface {
	Deliver(ctx context.Context, batch []Record) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, batch []Record) error

// Deliver calls f.
func (f SinkFunc) Deliver(ctx context.Context, batch []Record) error { return f(ctx, batch) }
