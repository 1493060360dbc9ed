// Package batch is a placeholder with the API of the binary telemetry
// batch codec that the wire branch is writing (docs/telemetry-path.md,
// "The batch"). It lets edge/forward build and test against that API
// before the merge; the merge replaces this file with the real codec.
// Its encoding is format byte 2 and DEFLATE of JSON, not the CBOR of the
// design.
package batch

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// Format is the first byte of a batch payload.
const Format byte = 2

// Batch is one gateway's telemetry of one outbox instance.
type Batch struct {
	Outbox string
	SentAt time.Time
	Things []Series
}

// Series is one thing's samples, in seq order.
type Series struct {
	Thing   string
	Samples []Sample
}

// Sample is one reading: Value x 10^-Scale.
type Sample struct {
	Seq   uint64
	At    time.Time
	Kind  string
	Value int64
	Scale uint8
}

// ErrFormat matches every decoding error.
var ErrFormat = errors.New("bad batch")

// Scaled returns v as an integer and a decimal scale (at most 9) such that
// value x 10^-scale == v exactly in float64.
func Scaled(v float64) (int64, uint8, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, 0, fmt.Errorf("scaled %v: not a finite number", v)
	}
	p := 1.0
	for s := uint8(0); s <= 9; s++ {
		x := math.Round(v * p)
		if math.Abs(x) < 1<<53 && x/p == v {
			return int64(x), s, nil
		}
		p *= 10
	}
	return 0, 0, fmt.Errorf("scaled %v: no decimal scale up to 9 represents it", v)
}

// Encode encodes b.
func Encode(b Batch) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(Format)
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	if err := json.NewEncoder(w).Encode(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode decodes a payload of Encode.
func Decode(p []byte) (Batch, error) {
	var b Batch
	if len(p) == 0 || p[0] != Format {
		return b, fmt.Errorf("%w: format byte", ErrFormat)
	}
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(p[1:])))
	if err != nil {
		return b, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return b, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return b, nil
}

// Split encodes b as payloads of at most maxBytes each, every sample in
// exactly one of them.
func Split(b Batch, maxBytes int) ([][]byte, error) {
	p, err := Encode(b)
	if err != nil {
		return nil, err
	}
	if len(p) <= maxBytes {
		return [][]byte{p}, nil
	}
	n := 0
	for _, s := range b.Things {
		n += len(s.Samples)
	}
	if n <= 1 {
		return nil, fmt.Errorf("split: one sample is %d bytes, more than %d", len(p), maxBytes)
	}
	first, second := halve(b, n/2)
	a, err := Split(first, maxBytes)
	if err != nil {
		return nil, err
	}
	c, err := Split(second, maxBytes)
	if err != nil {
		return nil, err
	}
	return append(a, c...), nil
}

func halve(b Batch, n int) (Batch, Batch) {
	first, second := Batch{Outbox: b.Outbox, SentAt: b.SentAt}, Batch{Outbox: b.Outbox, SentAt: b.SentAt}
	for _, s := range b.Things {
		switch {
		case n >= len(s.Samples):
			first.Things = append(first.Things, s)
			n -= len(s.Samples)
		case n > 0:
			first.Things = append(first.Things, Series{Thing: s.Thing, Samples: s.Samples[:n]})
			second.Things = append(second.Things, Series{Thing: s.Thing, Samples: s.Samples[n:]})
			n = 0
		default:
			second.Things = append(second.Things, s)
		}
	}
	return first, second
}
