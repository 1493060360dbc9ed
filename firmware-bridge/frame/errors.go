package frame

import "errors"

// Decode and encode errors. Each decode error is also a Reason the Decoder
// counts; errors returned by Unmarshal wrap one of these.
var (
	// ErrCOBS is a byte run between delimiters that is not valid COBS.
	ErrCOBS = errors.New("invalid cobs encoding")
	// ErrShort is a frame shorter than a header and a CRC (a truncated frame).
	ErrShort = errors.New("frame too short")
	// ErrCRC is a frame whose CRC-32C does not match its bytes.
	ErrCRC = errors.New("crc mismatch")
	// ErrVersion is a frame of a protocol version this codec does not speak.
	ErrVersion = errors.New("unknown protocol version")
	// ErrType is a frame of a type this version does not define.
	ErrType = errors.New("unknown frame type")
	// ErrOversize is a frame longer than MaxEncoded between two delimiters.
	ErrOversize = errors.New("frame too large")
	// ErrBody is a body whose length or fields are not what its type defines.
	ErrBody = errors.New("malformed body")
	// ErrInvalid is a Frame that cannot be encoded (a field out of range).
	ErrInvalid = errors.New("invalid frame")
)

// Reason is why the Decoder dropped a run of bytes.
type Reason uint8

// Drop reasons, one per decode error.
const (
	ReasonCOBS Reason = iota
	ReasonShort
	ReasonCRC
	ReasonVersion
	ReasonType
	ReasonOversize
	ReasonBody
	numReasons
)

var reasonNames = [numReasons]string{"cobs", "short", "crc", "version", "type", "oversize", "body"}

// String is the reason's metric label: cobs, short, crc, version, type,
// oversize or body.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Reasons lists every Reason, for pre-creating metric series.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// ReasonOf maps a decode error to its Reason; ok is false for other errors.
func ReasonOf(err error) (r Reason, ok bool) {
	for i, e := range []error{ErrCOBS, ErrShort, ErrCRC, ErrVersion, ErrType, ErrOversize, ErrBody} {
		if errors.Is(err, e) {
			return Reason(i), true
		}
	}
	return 0, false
}
