package outbox

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Lane is one of the two queues of the outbox.
type Lane uint8

// The lanes. Events are forwarded before telemetry.
const (
	Events    Lane = 1
	Telemetry Lane = 2
)

// Lanes lists the lanes in forwarding priority.
var Lanes = []Lane{Events, Telemetry}

func (l Lane) String() string {
	switch l {
	case Events:
		return "events"
	case Telemetry:
		return "telemetry"
	}
	return fmt.Sprintf("lane(%d)", uint8(l))
}

// FormatV1 is the first byte of every record value written by this version.
const FormatV1 byte = 1

// Entry is what the caller appends.
type Entry struct {
	Lane  Lane
	Thing string
	At    time.Time
	// Type is the event type (events lane) or the sample kind, e.g.
	// "weight_g" (telemetry lane).
	Type string
	// ID is the event id, unique per thing (events lane only).
	ID string
	// Value is the sample value (telemetry lane only).
	Value float64
	// Data is the event's data object as JSON (events lane only).
	Data []byte
}

// Record is a stored entry with its per-thing, per-lane sequence number.
type Record struct {
	Entry
	Seq uint64
}

func (e Entry) validate() error {
	switch {
	case e.Lane != Events && e.Lane != Telemetry:
		return fmt.Errorf("%w: lane %d", ErrInvalid, e.Lane)
	case e.Thing == "" || len(e.Thing) > 255:
		return fmt.Errorf("%w: thing %q: want 1-255 bytes", ErrInvalid, e.Thing)
	case e.Type == "" || len(e.Type) > 255:
		return fmt.Errorf("%w: type %q: want 1-255 bytes", ErrInvalid, e.Type)
	case len(e.ID) > 255:
		return fmt.Errorf("%w: id %q: longer than 255 bytes", ErrInvalid, e.ID)
	case e.Lane == Events && e.ID == "":
		return fmt.Errorf("%w: event %q of %q has no id", ErrInvalid, e.Type, e.Thing)
	}
	return nil
}

// encodeValue lays out a record value, format 1:
//
//	[0]      format (1)
//	[1:9]    at, unix nanoseconds, big endian int64
//	[9:17]   value, IEEE 754 bits, big endian
//	[17]     len(type), then type
//	[..]     len(id), then id
//	[..]     data (the rest)
//
// The thing, lane and seq live in the bucket path and the key.
func encodeValue(e Entry) []byte {
	b := make([]byte, 0, 19+len(e.Type)+len(e.ID)+len(e.Data))
	b = append(b, FormatV1)
	b = binary.BigEndian.AppendUint64(b, uint64(e.At.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(e.Value))
	b = append(b, byte(len(e.Type)))
	b = append(b, e.Type...)
	b = append(b, byte(len(e.ID)))
	b = append(b, e.ID...)
	b = append(b, e.Data...)
	return b
}

// decodeValue is the inverse of encodeValue; it copies what it keeps.
func decodeValue(b []byte) (Entry, error) {
	var e Entry
	if len(b) == 0 {
		return e, fmt.Errorf("record: empty value: %w", ErrFormat)
	}
	if b[0] != FormatV1 {
		return e, fmt.Errorf("record: format byte %d: %w", b[0], ErrFormat)
	}
	if len(b) < 18 {
		return e, fmt.Errorf("record: %d bytes, want at least 18: %w", len(b), ErrCorrupt)
	}
	e.At = time.Unix(0, int64(binary.BigEndian.Uint64(b[1:9]))).UTC()
	e.Value = math.Float64frombits(binary.BigEndian.Uint64(b[9:17]))
	rest := b[17:]
	n := int(rest[0])
	if len(rest) < 1+n+1 {
		return e, fmt.Errorf("record: type length %d overruns value: %w", n, ErrCorrupt)
	}
	e.Type = string(rest[1 : 1+n])
	rest = rest[1+n:]
	n = int(rest[0])
	if len(rest) < 1+n {
		return e, fmt.Errorf("record: id length %d overruns value: %w", n, ErrCorrupt)
	}
	e.ID = string(rest[1 : 1+n])
	if d := rest[1+n:]; len(d) > 0 {
		e.Data = append([]byte(nil), d...)
	}
	return e, nil
}

func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}

func keySeq(k []byte) uint64 { return binary.BigEndian.Uint64(k) }

// recordCost is what a record counts against the disk cap: key, value and
// bbolt's per-element overhead on a leaf page.
func recordCost(valueLen int) int64 { return int64(8 + valueLen + 16) }
