package batch

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Format is byte 0 of every batch payload.
const Format byte = 2

// Bounds of one batch. Encode refuses a batch beyond them and Decode a
// payload, so a payload Split makes always decodes.
const (
	// MaxInflated bounds the CBOR inside a payload in bytes (8 MiB): far
	// beyond a real batch, small enough that a DEFLATE bomb cannot exhaust
	// a consumer's memory.
	MaxInflated = 8 << 20
	// MaxThings bounds the series of a batch.
	MaxThings = 1024
	// MaxKinds bounds the kinds of one series.
	MaxKinds = 64
	// MaxSamples bounds the samples of a batch, all series together
	// (262,144: a minute of 50 Hz readings from 87 bowls).
	MaxSamples = 1 << 18
	// MaxScale is the largest decimal scale of a value (nanounits).
	MaxScale = 9
	// MaxTimeMs is the latest time a batch carries, in Unix milliseconds
	// (9999-12-31T23:59:59.999Z); the earliest is the Unix epoch.
	MaxTimeMs = 253402300799999
)

// Errors of this package.
var (
	// ErrFormat matches every error of Encode and Decode about the batch
	// itself (a *FormatError).
	ErrFormat = errors.New("bad telemetry batch")
	// ErrMaxBytes: Split cannot honour its maxBytes, because it is outside
	// 1..wire.MaxPayload or smaller than one sample's payload.
	ErrMaxBytes = errors.New("batch payload size limit")
)

// FormatError is a batch or payload that breaks the format. It matches
// ErrFormat.
type FormatError struct {
	// Field is where: "outbox", "things[1].values", "things[0].kinds[2].name".
	Field string
	// Problem says what is wrong, e.g. "has 3 deltas for 5 samples; want 4".
	Problem string
}

func (e *FormatError) Error() string {
	if e.Field == "" {
		return "telemetry batch: " + e.Problem
	}
	return "telemetry batch: " + e.Field + ": " + e.Problem
}

// Is makes errors.Is(err, ErrFormat) true.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

func formatErr(field, format string, args ...any) error {
	return &FormatError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Batch is one payload's content: samples of the things of one gateway,
// read from one outbox instance.
type Batch struct {
	// Outbox is the outbox instance id (wire.ValidName, at most
	// wire.MaxOutboxIDLen bytes); seqs are per outbox instance.
	Outbox string
	// SentAt is the gateway's clock when it encoded the batch.
	SentAt time.Time
	// Things holds one series per thing, each thing at most once.
	Things []Series
}

// Samples returns the number of samples in b.
func (b Batch) Samples() int {
	n := 0
	for _, s := range b.Things {
		n += len(s.Samples)
	}
	return n
}

// Series is one thing's samples in a batch.
type Series struct {
	// Thing is the thing (bowl) name (wire.ValidName).
	Thing string
	// Samples are in strictly increasing seq order; a series has at
	// least one.
	Samples []Sample
}

// Sample is one reading.
type Sample struct {
	// Seq is the outbox's per-thing telemetry seq, from 1.
	Seq uint64
	// At is when it was read; the batch keeps milliseconds.
	At time.Time
	// Kind is what was read ("weight_g"; wire.CheckKind).
	Kind string
	// Value x 10^-Scale is the reading.
	Value int64
	// Scale is 0..MaxScale.
	Scale uint8
}

// Float returns the value as a float64: Value x 10^-Scale, correctly
// rounded. For a pair from Scaled(v) it is v again.
func (s Sample) Float() float64 {
	if s.Scale == 0 || s.Scale > MaxScale {
		return float64(s.Value) * math.Pow10(-int(s.Scale))
	}
	return float64(s.Value) / pow10f[s.Scale]
}

var pow10f = [MaxScale + 1]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

var pow10i = [MaxScale + 1]int64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// maxExact is the largest integer below which every int64 is a float64.
const maxExact = 1 << 53

// Scaled returns v as an integer with the smallest decimal scale 0..9 that
// holds it exactly: the shortest decimal that reads back as v (strconv's),
// so 412.5 is (4125, 1), 0.1 is (1, 1) and 3712 is (3712, 0); weight_g in
// grams with milligram resolution has scale 3 at most. It refuses NaN, the
// infinities, values that need more than 9 decimals, and, at a scale above
// 0, integers beyond 2^53, where Float would no longer give v back. -0 is
// (0, 0).
func Scaled(v float64) (value int64, scale uint8, err error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, 0, fmt.Errorf("scale %v: not a finite number", v)
	}
	if v == math.Trunc(v) {
		if v < -(1<<63) || v >= 1<<63 {
			return 0, 0, fmt.Errorf("scale %v: beyond int64", v)
		}
		return int64(v), 0, nil
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	dot := strings.IndexByte(s, '.')
	if dot < 0 || len(s)-dot-1 > MaxScale {
		return 0, 0, fmt.Errorf("scale %v: needs more than %d decimals", v, MaxScale)
	}
	scale = uint8(len(s) - dot - 1)
	n, err := strconv.ParseInt(s[:dot]+s[dot+1:], 10, 64)
	if err != nil || n > maxExact || n < -maxExact {
		return 0, 0, fmt.Errorf("scale %v: %s at scale %d is beyond 2^53", v, s, scale)
	}
	return n, scale, nil
}
