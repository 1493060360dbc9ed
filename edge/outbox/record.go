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

// FormatV1 is the file format (the meta bucket's "format" key) and the
// first byte of record values written before the age clock existed.
const FormatV1 byte = 1

// recordV2 is the first byte of every record value written by this
// version: format 1 plus the outbox age at append (see ageClock).
const recordV2 byte = 2

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

// encodeValue lays out a record value appended at outbox age 0 (tests and
// cost estimates: every value has the same layout).
func encodeValue(e Entry) []byte { return encodeValueAt(e, 0) }

// encodeValueAt lays out a record value, format 2:
//
//	[0]      format (2)
//	[1:9]    at, unix nanoseconds, big endian int64
//	[9:17]   outbox age at append, nanoseconds, big endian int64 (ageClock)
//	[17:25]  value, IEEE 754 bits, big endian
//	[25]     len(type), then type
//	[..]     len(id), then id
//	[..]     data (the rest)
//
// Format 1, written before the age clock, lacks [9:17]; it still decodes,
// with age 0. The thing, lane and seq live in the bucket path and the key.
func encodeValueAt(e Entry, age time.Duration) []byte {
	b := make([]byte, 0, 27+len(e.Type)+len(e.ID)+len(e.Data))
	b = append(b, recordV2)
	b = binary.BigEndian.AppendUint64(b, uint64(e.At.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(age))
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
	e, _, err := decodeValueAge(b)
	return e, err
}

// decodeValueAge decodes a record value and the outbox age at which it was
// appended (0 for a format 1 value).
func decodeValueAge(b []byte) (Entry, time.Duration, error) {
	var e Entry
	if len(b) == 0 {
		return e, 0, fmt.Errorf("record: empty value: %w", ErrFormat)
	}
	var age time.Duration
	switch b[0] {
	case FormatV1:
		if len(b) < 18 {
			return e, 0, fmt.Errorf("record: %d bytes, want at least 18: %w", len(b), ErrCorrupt)
		}
		b = append(b[:9:9], b[9:]...) // same layout without the age
	case recordV2:
		if len(b) < 26 {
			return e, 0, fmt.Errorf("record: %d bytes, want at least 26: %w", len(b), ErrCorrupt)
		}
		age = time.Duration(binary.BigEndian.Uint64(b[9:17]))
		b = append(b[:9:9], b[17:]...)
	default:
		return e, 0, fmt.Errorf("record: format byte %d: %w", b[0], ErrFormat)
	}
	e.At = time.Unix(0, int64(binary.BigEndian.Uint64(b[1:9]))).UTC()
	e.Value = math.Float64frombits(binary.BigEndian.Uint64(b[9:17]))
	rest := b[17:]
	n := int(rest[0])
	if len(rest) < 1+n+1 {
		return e, 0, fmt.Errorf("record: type length %d overruns value: %w", n, ErrCorrupt)
	}
	e.Type = string(rest[1 : 1+n])
	rest = rest[1+n:]
	n = int(rest[0])
	if len(rest) < 1+n {
		return e, 0, fmt.Errorf("record: id length %d overruns value: %w", n, ErrCorrupt)
	}
	e.ID = string(rest[1 : 1+n])
	if d := rest[1+n:]; len(d) > 0 {
		e.Data = append([]byte(nil), d...)
	}
	return e, age, nil
}

func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}

func keySeq(k []byte) uint64 { return binary.BigEndian.Uint64(k) }

// recordCost is what a record counts against the disk cap: key, value and
// bbolt's per-element overhead on a leaf page.
func recordCost(valueLen int) int64 { return int64(8 + valueLen + 16) }
