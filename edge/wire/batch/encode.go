package batch

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Encode encodes b as one payload. Times are truncated to the
// millisecond; per kind of a series the batch uses the largest scale of
// its samples (rescaling the others) and, as quantum, the greatest common
// divisor of the kind's steps. It refuses, with a *FormatError, a batch
// that Decode would refuse: bad names, an empty series, seqs not strictly
// increasing, times outside 1970..9999, more than MaxSamples samples, a
// value that overflows int64 when rescaled (or a kind whose only nonzero
// value is -2^63, whose quantum would be 2^63). It does not bound the
// payload's size: Split does.
func Encode(b Batch) ([]byte, error) {
	data, err := encodeCBOR(b)
	if err != nil {
		return nil, err
	}
	return deflate(data)
}

// encodeCBOR returns the CBOR map of b, before compression.
func encodeCBOR(b Batch) ([]byte, error) {
	out, err := build(b)
	if err != nil {
		return nil, err
	}
	data, err := encMode.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode telemetry batch: %w", err)
	}
	return data, nil
}

func build(b Batch) (outBatch, error) {
	out := outBatch{Outbox: b.Outbox, Things: make([]outSeries, 0, len(b.Things))}
	if err := checkOutbox(b.Outbox); err != nil {
		return out, err
	}
	var err error
	if out.SentAt, err = millis("sent_at", b.SentAt); err != nil {
		return out, err
	}
	if len(b.Things) > MaxThings {
		return out, formatErr("things", "has %d series, more than %d", len(b.Things), MaxThings)
	}
	if n := b.Samples(); n > MaxSamples {
		return out, formatErr("things", "has %d samples, more than %d", n, MaxSamples)
	}
	seen := make(map[string]int, len(b.Things))
	for i, s := range b.Things {
		field := fmt.Sprintf("things[%d]", i)
		if j, ok := seen[s.Thing]; ok {
			return out, formatErr(field+".thing", "%q is also things[%d]; want each thing once", s.Thing, j)
		}
		seen[s.Thing] = i
		os, err := buildSeries(field, s)
		if err != nil {
			return out, err
		}
		out.Things = append(out.Things, os)
	}
	return out, nil
}

func buildSeries(field string, s Series) (outSeries, error) {
	out := outSeries{Thing: s.Thing}
	if err := wire.CheckName("thing", s.Thing); err != nil {
		return out, formatErr(field+".thing", "%v", err)
	}
	n := len(s.Samples)
	if n == 0 {
		return out, formatErr(field+".values", "no samples; want at least one")
	}
	out.Seq = s.Samples[0].Seq
	if out.Seq == 0 {
		return out, formatErr(field+".seq", "is 0; seqs start at 1")
	}
	var err error
	if out.T0, err = millis(field+".t0", s.Samples[0].At); err != nil {
		return out, err
	}
	var gaps, dt, idx []byte
	dt = make([]byte, 0, n)
	gapped := false
	kinds := map[string]int{}
	var order []string
	for i, x := range s.Samples {
		if err := wire.CheckKind("kind", x.Kind); err != nil {
			return out, formatErr(fmt.Sprintf("%s.samples[%d].kind", field, i), "%v", err)
		}
		if x.Scale > MaxScale {
			return out, formatErr(fmt.Sprintf("%s.samples[%d].scale", field, i), "is %d, more than %d", x.Scale, MaxScale)
		}
		k, ok := kinds[x.Kind]
		if !ok {
			if len(order) == MaxKinds {
				return out, formatErr(field+".kinds", "more than %d kinds", MaxKinds)
			}
			k = len(order)
			kinds[x.Kind] = k
			order = append(order, x.Kind)
		}
		idx = binary.AppendUvarint(idx, uint64(k))
		if i == 0 {
			continue
		}
		prev := s.Samples[i-1]
		if x.Seq <= prev.Seq {
			return out, formatErr(fmt.Sprintf("%s.samples[%d].seq", field, i), "%d after %d; want strictly increasing seqs", x.Seq, prev.Seq)
		}
		gap := x.Seq - prev.Seq - 1
		gapped = gapped || gap != 0
		gaps = binary.AppendUvarint(gaps, gap)
		ms, err := millis(fmt.Sprintf("%s.samples[%d].at", field, i), x.At)
		if err != nil {
			return out, err
		}
		pms, _ := millis("", prev.At)
		dt = binary.AppendVarint(dt, ms-pms)
	}
	out.Dt = dt
	if gapped {
		out.SeqGaps = gaps
	}
	if len(order) > 1 {
		out.KindIndex = idx
	}
	if out.Kinds, out.Values, err = buildValues(field, s.Samples, kinds, order); err != nil {
		return out, err
	}
	return out, nil
}

// buildValues returns the kinds of a series with their scale and quantum,
// and the values field.
func buildValues(field string, samples []Sample, kinds map[string]int, order []string) ([]kindDef, []byte, error) {
	defs := make([]kindDef, len(order))
	for i, k := range order {
		defs[i].Name = k
	}
	for _, x := range samples {
		d := &defs[kinds[x.Kind]]
		d.Scale = max(d.Scale, x.Scale)
	}
	// Rescale, then take each kind's steps and their gcd.
	steps := make([]int64, len(samples))
	last := make([]int64, len(order))
	gcd := make([]uint64, len(order))
	for i, x := range samples {
		k := kinds[x.Kind]
		v, ok := rescale(x.Value, defs[k].Scale-x.Scale)
		if !ok {
			return nil, nil, formatErr(fmt.Sprintf("%s.samples[%d].value", field, i), "%d at scale %d overflows int64 at scale %d", x.Value, x.Scale, defs[k].Scale)
		}
		step, ok := sub(v, last[k])
		if !ok {
			return nil, nil, formatErr(fmt.Sprintf("%s.samples[%d].value", field, i), "steps by more than int64 from the previous %s", x.Kind)
		}
		steps[i], last[k] = step, v
		gcd[k] = gcdU(gcd[k], absU(step))
	}
	for k := range defs {
		switch {
		case gcd[k] == 0:
			gcd[k] = 1
		case gcd[k] > math.MaxInt64:
			return nil, nil, formatErr(fmt.Sprintf("%s.kinds[%d].quantum", field, k), "%d is beyond int64", gcd[k])
		}
		defs[k].Quantum = gcd[k]
	}
	values := make([]byte, 0, len(samples))
	for i, x := range samples {
		values = binary.AppendVarint(values, steps[i]/int64(gcd[kinds[x.Kind]]))
	}
	return defs, values, nil
}

func checkOutbox(id string) error {
	if id == "" || len(id) > wire.MaxOutboxIDLen || !wire.ValidName(id) {
		return formatErr("outbox", "%q: want a name (wire.ValidName) of at most %d bytes", id, wire.MaxOutboxIDLen)
	}
	return nil
}

// millis returns t in Unix milliseconds, truncated, refusing times outside
// 0..MaxTimeMs.
func millis(field string, t time.Time) (int64, error) {
	ms := t.UnixMilli()
	if t.Before(time.UnixMilli(0)) || ms > MaxTimeMs {
		return 0, formatErr(field, "%s: want a time from 1970 to 9999", t.UTC().Format(time.RFC3339Nano))
	}
	return ms, nil
}

// rescale returns v x 10^by.
func rescale(v int64, by uint8) (int64, bool) {
	if by == 0 {
		return v, true
	}
	m := pow10i[by]
	if v > math.MaxInt64/m || v < math.MinInt64/m {
		return 0, false
	}
	return v * m, true
}

func sub(a, b int64) (int64, bool) {
	d := a - b
	return d, (d < a) == (b > 0)
}

func add(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0)
}

func absU(v int64) uint64 {
	if v < 0 {
		return uint64(-(v + 1)) + 1
	}
	return uint64(v)
}

func gcdU(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// writers reuses DEFLATE writers: one at BestCompression allocates about a
// megabyte.
var writers = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestCompression)
	return w
}}

// deflate returns Format followed by data compressed.
func deflate(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(data)/4 + 16)
	buf.WriteByte(Format)
	w := writers.Get().(*flate.Writer)
	defer writers.Put(w)
	w.Reset(&buf)
	if _, err := w.Write(data); err != nil {
		return nil, fmt.Errorf("encode telemetry batch: deflate: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode telemetry batch: deflate: %w", err)
	}
	return buf.Bytes(), nil
}
