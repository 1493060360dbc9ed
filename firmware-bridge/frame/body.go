package frame

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// Body is a frame body. The implementations are the value types below.
type Body interface {
	Type() Type
	appendTo(b []byte) []byte
	validate() error
}

// Capability bits announced in Hello.Capabilities.
const (
	CapWeight      uint16 = 1 << 0
	CapTemperature uint16 = 1 << 1
	CapBattery     uint16 = 1 << 2
	CapRFID        uint16 = 1 << 3
	CapLid         uint16 = 1 << 4
	capAll                = CapWeight | CapTemperature | CapBattery | CapRFID | CapLid
)

// Hello introduces the MCU after boot or when the gateway asks for it (Ping
// with WantHello). Its frame Seq is the oldest sequence number still in the
// MCU's ring (or the next it will use when the ring is empty): the gateway
// expects that number next.
type Hello struct {
	DeviceID     string   `json:"device_id"`
	Firmware     [3]uint8 `json:"firmware"` // major, minor, patch
	Capabilities uint16   `json:"capabilities"`
	RingSize     uint16   `json:"ring_size"`
	SampleRateHz uint16   `json:"sample_rate_hz"`
	// BootEpoch names the MCU's sequence counter: a non-zero number the
	// firmware draws at random when it starts a counter from scratch (first
	// boot, flash erase, a new board under the same device id) and keeps in
	// flash beside the counter. A changed epoch tells the gateway that seq
	// numbers restarted, so (device_id, boot_epoch, seq) names one reading.
	// 0 is a firmware that sends no epoch (the hello body ends before it).
	BootEpoch uint32 `json:"boot_epoch,omitempty"`
}

// WeightBatch is consecutive load-cell samples at RateHz; the first was
// taken at the frame's UptimeMillis, sample i at UptimeMillis + i*1000/RateHz.
type WeightBatch struct {
	RateHz     uint16  `json:"rate_hz"`
	Milligrams []int32 `json:"samples_mg"`
}

// Temperature is the load cell's temperature, in hundredths of a degree C.
type Temperature struct {
	CentiCelsius int16 `json:"centi_celsius"`
}

// Battery is the supply state.
type Battery struct {
	Millivolts uint16 `json:"millivolts"`
	Percent    uint8  `json:"percent"`
	Charging   bool   `json:"charging"`
}

// TagSeen is an RFID pet tag read (FDX-B tags as their 15-digit number).
type TagSeen struct {
	Tag  string `json:"tag"`
	RSSI int8   `json:"rssi"`
}

// LidState is the lid switch and tamper sensor state.
type LidState uint8

// Lid states.
const (
	LidClosed LidState = 0
	LidOpen   LidState = 1
	LidTamper LidState = 2
)

// Lid is a lid or tamper change.
type Lid struct {
	State LidState `json:"state"`
}

// FaultCode identifies a device fault.
type FaultCode uint16

// Fault codes.
const (
	FaultLoadCell     FaultCode = 1 // load cell disconnected or saturated
	FaultTagReader    FaultCode = 2 // RFID reader not answering
	FaultBrownout     FaultCode = 3 // supply dipped, MCU reset imminent
	FaultRingOverflow FaultCode = 4 // readings refused while the ring was full; Detail has the count
	FaultSensorDrift  FaultCode = 5 // tare drifted beyond the limit
)

// Fault is a device fault report.
type Fault struct {
	Code   FaultCode `json:"code"`
	Detail string    `json:"detail"`
}

// Pong answers a Ping or a TimeSync with the same token.
type Pong struct {
	Token uint32 `json:"token"`
}

// Ack is the gateway's cumulative acknowledgement: every sequenced frame up
// to and including Cumulative is durable and the MCU may free it. Resend
// asks the MCU to retransmit from Cumulative+1 now (go-back-N) instead of
// waiting for its retransmit timeout.
type Ack struct {
	Cumulative uint32 `json:"cumulative_seq"`
	Resend     bool   `json:"resend"`
}

// Tare asks the MCU to zero the scale.
type Tare struct{}

// SetRate sets the weight sample rate.
type SetRate struct {
	RateHz uint16 `json:"rate_hz"`
}

// TimeSync gives the MCU the gateway's wall clock; the MCU answers with a
// Pong carrying Token, whose uptime the gateway uses to map device uptime
// to wall time.
type TimeSync struct {
	Token      uint32 `json:"token"`
	UnixMillis int64  `json:"unix_ms"`
}

// Ping checks the link; the MCU answers with a Pong, preceded by a Hello
// when WantHello is set.
type Ping struct {
	Token     uint32 `json:"token"`
	WantHello bool   `json:"want_hello"`
}

func (Hello) Type() Type       { return TypeHello }
func (WeightBatch) Type() Type { return TypeWeight }
func (Temperature) Type() Type { return TypeTemperature }
func (Battery) Type() Type     { return TypeBattery }
func (TagSeen) Type() Type     { return TypeTag }
func (Lid) Type() Type         { return TypeLid }
func (Fault) Type() Type       { return TypeFault }
func (Pong) Type() Type        { return TypePong }
func (Ack) Type() Type         { return TypeAck }
func (Tare) Type() Type        { return TypeTare }
func (SetRate) Type() Type     { return TypeSetRate }
func (TimeSync) Type() Type    { return TypeTimeSync }
func (Ping) Type() Type        { return TypePing }

var le = binary.LittleEndian

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func (h Hello) appendTo(b []byte) []byte {
	b = append(b, byte(len(h.DeviceID)))
	b = append(b, h.DeviceID...)
	b = append(b, h.Firmware[:]...)
	b = le.AppendUint16(b, h.Capabilities)
	b = le.AppendUint16(b, h.RingSize)
	b = le.AppendUint16(b, h.SampleRateHz)
	if h.BootEpoch != 0 {
		b = le.AppendUint32(b, h.BootEpoch)
	}
	return b
}

func (w WeightBatch) appendTo(b []byte) []byte {
	b = le.AppendUint16(b, w.RateHz)
	b = append(b, byte(len(w.Milligrams)))
	for _, s := range w.Milligrams {
		b = le.AppendUint32(b, uint32(s))
	}
	return b
}

func (t Temperature) appendTo(b []byte) []byte { return le.AppendUint16(b, uint16(t.CentiCelsius)) }

func (x Battery) appendTo(b []byte) []byte {
	b = le.AppendUint16(b, x.Millivolts)
	return append(b, x.Percent, b2u(x.Charging))
}

func (t TagSeen) appendTo(b []byte) []byte {
	b = append(b, byte(len(t.Tag)))
	b = append(b, t.Tag...)
	return append(b, byte(t.RSSI))
}

func (l Lid) appendTo(b []byte) []byte { return append(b, byte(l.State)) }

func (f Fault) appendTo(b []byte) []byte {
	b = le.AppendUint16(b, uint16(f.Code))
	b = append(b, byte(len(f.Detail)))
	return append(b, f.Detail...)
}

func (p Pong) appendTo(b []byte) []byte { return le.AppendUint32(b, p.Token) }

func (a Ack) appendTo(b []byte) []byte {
	b = le.AppendUint32(b, a.Cumulative)
	return append(b, b2u(a.Resend))
}

func (Tare) appendTo(b []byte) []byte { return b }

func (s SetRate) appendTo(b []byte) []byte { return le.AppendUint16(b, s.RateHz) }

func (t TimeSync) appendTo(b []byte) []byte {
	b = le.AppendUint32(b, t.Token)
	return le.AppendUint64(b, uint64(t.UnixMillis))
}

func (p Ping) appendTo(b []byte) []byte {
	b = le.AppendUint32(b, p.Token)
	return append(b, b2u(p.WantHello))
}

func validRate(hz uint16) error {
	if hz < 1 || hz > 1000 {
		return fmt.Errorf("rate %d Hz outside 1..1000", hz)
	}
	return nil
}

func validID(s string, max int) error {
	if len(s) < 1 || len(s) > max {
		return fmt.Errorf("length %d outside 1..%d", len(s), max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
		if !ok {
			return fmt.Errorf("byte 0x%02x at %d not in [A-Za-z0-9._:-]", c, i)
		}
	}
	return nil
}

func (h Hello) validate() error {
	if err := validID(h.DeviceID, MaxDeviceID); err != nil {
		return fmt.Errorf("hello device id: %w", err)
	}
	if h.Capabilities&^capAll != 0 {
		return fmt.Errorf("hello capabilities 0x%04x: reserved bits set", h.Capabilities)
	}
	if err := validRate(h.SampleRateHz); err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	return nil
}

func (w WeightBatch) validate() error {
	if len(w.Milligrams) < 1 || len(w.Milligrams) > MaxSamples {
		return fmt.Errorf("weight batch of %d samples outside 1..%d", len(w.Milligrams), MaxSamples)
	}
	return validRate(w.RateHz)
}

func (Temperature) validate() error { return nil }

func (x Battery) validate() error {
	if x.Percent > 100 {
		return fmt.Errorf("battery percent %d above 100", x.Percent)
	}
	return nil
}

func (t TagSeen) validate() error {
	if err := validID(t.Tag, MaxTag); err != nil {
		return fmt.Errorf("tag: %w", err)
	}
	return nil
}

func (l Lid) validate() error {
	if l.State > LidTamper {
		return fmt.Errorf("lid state %d unknown", l.State)
	}
	return nil
}

func (f Fault) validate() error {
	if len(f.Detail) > MaxDetail || !utf8.ValidString(f.Detail) {
		return fmt.Errorf("fault detail: %d bytes, want valid UTF-8 of at most %d", len(f.Detail), MaxDetail)
	}
	return nil
}

func (Pong) validate() error     { return nil }
func (Ack) validate() error      { return nil }
func (Tare) validate() error     { return nil }
func (TimeSync) validate() error { return nil }
func (Ping) validate() error     { return nil }

func (s SetRate) validate() error {
	if err := validRate(s.RateHz); err != nil {
		return fmt.Errorf("set rate: %w", err)
	}
	return nil
}

// reader walks a body; any overrun sets bad instead of panicking.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if r.bad || n > len(r.b) {
		r.bad = true
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if p := r.take(2); p != nil {
		return le.Uint16(p)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if p := r.take(4); p != nil {
		return le.Uint32(p)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if p := r.take(8); p != nil {
		return le.Uint64(p)
	}
	return 0
}

func (r *reader) flag() bool {
	v := r.u8()
	if v > 1 {
		r.bad = true
	}
	return v == 1
}

func (r *reader) str() string { return string(r.take(int(r.u8()))) }

// decodeBody parses the body of type t. It returns ErrType for an unknown
// type and ErrBody for a malformed body.
func decodeBody(t Type, b []byte) (Body, error) {
	r := reader{b: b}
	var body Body
	switch t {
	case TypeHello:
		var h Hello
		h.DeviceID = r.str()
		copy(h.Firmware[:], r.take(3))
		h.Capabilities, h.RingSize, h.SampleRateHz = r.u16(), r.u16(), r.u16()
		if len(r.b) == 4 { // the optional boot epoch; never 0 on the wire
			if h.BootEpoch = r.u32(); h.BootEpoch == 0 {
				return nil, fmt.Errorf("%w: hello boot epoch 0 sent (omit it instead)", ErrBody)
			}
		}
		body = h
	case TypeWeight:
		var w WeightBatch
		w.RateHz = r.u16()
		n := int(r.u8())
		if n > MaxSamples || len(r.b) != 4*n {
			return nil, fmt.Errorf("%w: weight batch of %d samples with %d sample bytes", ErrBody, n, len(r.b))
		}
		w.Milligrams = make([]int32, n)
		for i := range w.Milligrams {
			w.Milligrams[i] = int32(r.u32())
		}
		body = w
	case TypeTemperature:
		body = Temperature{CentiCelsius: int16(r.u16())}
	case TypeBattery:
		body = Battery{Millivolts: r.u16(), Percent: r.u8(), Charging: r.flag()}
	case TypeTag:
		body = TagSeen{Tag: r.str(), RSSI: int8(r.u8())}
	case TypeLid:
		body = Lid{State: LidState(r.u8())}
	case TypeFault:
		code := FaultCode(r.u16())
		body = Fault{Code: code, Detail: r.str()}
	case TypePong:
		body = Pong{Token: r.u32()}
	case TypeAck:
		body = Ack{Cumulative: r.u32(), Resend: r.flag()}
	case TypeTare:
		body = Tare{}
	case TypeSetRate:
		body = SetRate{RateHz: r.u16()}
	case TypeTimeSync:
		body = TimeSync{Token: r.u32(), UnixMillis: int64(r.u64())}
	case TypePing:
		body = Ping{Token: r.u32(), WantHello: r.flag()}
	default:
		return nil, fmt.Errorf("%w: 0x%02x", ErrType, uint8(t))
	}
	if r.bad || len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %s body of %d bytes", ErrBody, t, len(b))
	}
	if err := body.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBody, err)
	}
	return body, nil
}
