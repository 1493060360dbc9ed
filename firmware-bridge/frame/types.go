package frame

import "fmt"

// Version is the protocol version this codec speaks (header byte 0).
const Version = 1

// Size limits. A raw frame is header + body + CRC, before COBS.
const (
	HeaderSize = 10 // version u8, type u8, seq u32, uptime_ms u32
	CRCSize    = 4
	MaxBody    = 240
	MaxRaw     = HeaderSize + MaxBody + CRCSize
	// MaxEncoded is the largest COBS-encoded frame without its delimiter.
	MaxEncoded = MaxRaw + (MaxRaw+253)/254
	// MaxSamples is the most weight samples one WeightBatch carries.
	MaxSamples = 50
	// MaxDeviceID, MaxTag and MaxDetail bound the string fields in bytes.
	MaxDeviceID = 32
	MaxTag      = 24
	MaxDetail   = 64
)

// Type is the frame type (header byte 1). MCU-to-gateway types are below
// 0x80, gateway-to-MCU types have the high bit set.
type Type uint8

// Frame types of protocol version 1.
const (
	TypeHello       Type = 0x01
	TypeWeight      Type = 0x02
	TypeTemperature Type = 0x03
	TypeBattery     Type = 0x04
	TypeTag         Type = 0x05
	TypeLid         Type = 0x06
	TypeFault       Type = 0x07
	TypePong        Type = 0x08

	TypeAck      Type = 0x81
	TypeTare     Type = 0x82
	TypeSetRate  Type = 0x83
	TypeTimeSync Type = 0x84
	TypePing     Type = 0x85
)

var typeNames = map[Type]string{
	TypeHello: "hello", TypeWeight: "weight", TypeTemperature: "temperature",
	TypeBattery: "battery", TypeTag: "tag", TypeLid: "lid", TypeFault: "fault",
	TypePong: "pong", TypeAck: "ack", TypeTare: "tare", TypeSetRate: "set_rate",
	TypeTimeSync: "time_sync", TypePing: "ping",
}

// String is the type's name as used in JSON ("weight", "ack", ...).
func (t Type) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("0x%02x", uint8(t))
}

// FromMCU reports whether frames of this type travel MCU to gateway.
func (t Type) FromMCU() bool { return t < 0x80 }

// Sequenced reports whether frames of this type carry data the MCU keeps
// in its retransmit ring until the gateway acknowledges them. Hello and
// pong are link control; gateway frames are never sequenced.
func (t Type) Sequenced() bool { return t >= TypeWeight && t <= TypeFault }

// TypeByName is the inverse of Type.String for defined types.
func TypeByName(name string) (Type, bool) {
	for t, n := range typeNames {
		if n == name {
			return t, true
		}
	}
	return 0, false
}

// Frame is one decoded frame.
type Frame struct {
	// Seq is the MCU's per-device sequence number for sequenced types (it
	// wraps from 2^32-1 to 0), the hello's "oldest unacknowledged" number,
	// and the gateway's own frame counter on gateway frames.
	Seq uint32
	// UptimeMillis is the sender's uptime in milliseconds when the frame's
	// data was taken (for a weight batch: its first sample). It wraps after
	// about 49.7 days. Gateway frames send 0.
	UptimeMillis uint32
	// Body is one of the body types of this package, as a value
	// (WeightBatch, not *WeightBatch).
	Body Body
}

// Type is the frame's type, taken from its body.
func (f Frame) Type() Type {
	if f.Body == nil {
		return 0
	}
	return f.Body.Type()
}
