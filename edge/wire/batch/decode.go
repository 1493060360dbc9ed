package batch

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// IsBatch reports whether p is a batch payload rather than a v1 JSON one:
// its first byte is Format.
func IsBatch(p []byte) bool { return len(p) > 0 && p[0] == Format }

// Decode decodes a batch payload, strictly: every error is a *FormatError
// naming the field and the problem, and matches ErrFormat. It refuses a
// payload beyond wire.MaxPayload, one that inflates beyond MaxInflated,
// trailing bytes after the DEFLATE stream or the CBOR map, unknown or
// duplicate keys, tags, indefinite lengths, a missing field, counts that
// disagree with the samples, varints that overflow or are not minimal,
// kind indexes out of range, names that break wire's rules, seqs, times or
// values that overflow, and every choice Encode would have made otherwise
// (seq_gaps or kind_index present when they must be absent, kinds not in
// order of first use, a quantum that is not the gcd). Times are returned
// in UTC.
func Decode(p []byte) (Batch, error) {
	var b Batch
	switch {
	case len(p) == 0:
		return b, formatErr("format", "empty payload")
	case p[0] != Format:
		return b, formatErr("format", "byte 0 is 0x%02x; want 0x%02x", p[0], Format)
	case len(p) > wire.MaxPayload:
		return b, formatErr("payload", "%d bytes, more than %d", len(p), wire.MaxPayload)
	}
	data, err := inflate(p[1:])
	if err != nil {
		return b, err
	}
	var in inBatch
	if err := decMode.Unmarshal(data, &in); err != nil {
		return b, formatErr("cbor", "%v", err)
	}
	switch {
	case in.Outbox == nil:
		return b, formatErr("outbox", "missing (key 0)")
	case in.SentAt == nil:
		return b, formatErr("sent_at", "missing (key 1)")
	case in.Things == nil:
		return b, formatErr("things", "missing (key 2)")
	}
	if err := checkOutbox(*in.Outbox); err != nil {
		return b, err
	}
	b.Outbox = *in.Outbox
	if b.SentAt, err = fromMillis("sent_at", *in.SentAt); err != nil {
		return b, err
	}
	things := *in.Things
	if len(things) > MaxThings {
		return b, formatErr("things", "has %d series, more than %d", len(things), MaxThings)
	}
	b.Things = make([]Series, 0, len(things))
	seen := make(map[string]int, len(things))
	total := 0
	for i, s := range things {
		field := fmt.Sprintf("things[%d]", i)
		ser, err := decodeSeries(field, s, MaxSamples-total)
		if err != nil {
			return Batch{}, err
		}
		if j, ok := seen[ser.Thing]; ok {
			return Batch{}, formatErr(field+".thing", "%q is also things[%d]; want each thing once", ser.Thing, j)
		}
		seen[ser.Thing] = i
		total += len(ser.Samples)
		b.Things = append(b.Things, ser)
	}
	return b, nil
}

// inflate returns the DEFLATE stream p inflated, at most MaxInflated
// bytes, with nothing after its end.
func inflate(p []byte) ([]byte, error) {
	r := bytes.NewReader(p)
	fr := flate.NewReader(r)
	data, err := io.ReadAll(io.LimitReader(fr, MaxInflated+1))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, formatErr("deflate", "truncated stream")
		}
		return nil, formatErr("deflate", "%v", err)
	}
	if len(data) > MaxInflated {
		return nil, formatErr("deflate", "inflates to more than %d bytes", MaxInflated)
	}
	if r.Len() != 0 {
		return nil, formatErr("deflate", "%d bytes after the end of the stream", r.Len())
	}
	return data, nil
}

// decodeSeries decodes the series at field, strictly and in this order:
// the keys that must be present, the thing and its first seq, the kinds,
// the number of samples (at most room, what the batch has left), then
// each sample's kind, seq, time and value. The order decides which
// problem a payload with several is refused for (testdata/batches.json).
func decodeSeries(field string, s inSeries, room int) (Series, error) {
	if err := checkPresent(field, s); err != nil {
		return Series{}, err
	}
	if err := wire.CheckName("thing", *s.Thing); err != nil {
		return Series{}, formatErr(field+".thing", "%v", err)
	}
	if *s.Seq == 0 {
		return Series{}, formatErr(field+".seq", "is 0; seqs start at 1")
	}
	kinds := *s.Kinds
	if err := checkKinds(field, kinds); err != nil {
		return Series{}, err
	}
	n, err := countSamples(field, *s.Values, room)
	if err != nil {
		return Series{}, err
	}
	samples := make([]Sample, n)
	kind, err := decodeKindIndex(field, s.KindIndex, kinds, samples)
	if err != nil {
		return Series{}, err
	}
	if err := decodeSeqs(field, *s.Seq, s.SeqGaps, samples); err != nil {
		return Series{}, err
	}
	if err := decodeTimes(field, *s.T0, *s.Dt, samples); err != nil {
		return Series{}, err
	}
	if err := decodeValues(field, *s.Values, kinds, kind, samples); err != nil {
		return Series{}, err
	}
	return Series{Thing: *s.Thing, Samples: samples}, nil
}

// checkPresent checks that every key a series must have is there
// (seq_gaps and kind_index may be absent).
func checkPresent(field string, s inSeries) error {
	switch {
	case s.Thing == nil:
		return formatErr(field+".thing", "missing (key 0)")
	case s.Seq == nil:
		return formatErr(field+".seq", "missing (key 1)")
	case s.T0 == nil:
		return formatErr(field+".t0", "missing (key 3)")
	case s.Dt == nil:
		return formatErr(field+".dt", "missing (key 4)")
	case s.Kinds == nil:
		return formatErr(field+".kinds", "missing (key 5)")
	case s.Values == nil:
		return formatErr(field+".values", "missing (key 7)")
	}
	return nil
}

// checkKinds checks the kinds table: 1 to MaxKinds kinds, each a valid
// kind name used once, a scale up to MaxScale and a quantum that fits
// int64.
func checkKinds(field string, kinds []kindDef) error {
	switch {
	case len(kinds) == 0:
		return formatErr(field+".kinds", "empty; want at least one kind")
	case len(kinds) > MaxKinds:
		return formatErr(field+".kinds", "has %d kinds, more than %d", len(kinds), MaxKinds)
	}
	names := make(map[string]int, len(kinds))
	for k, d := range kinds {
		kf := fmt.Sprintf("%s.kinds[%d]", field, k)
		if err := wire.CheckKind("kind", d.Name); err != nil {
			return formatErr(kf+".name", "%v", err)
		}
		if j, ok := names[d.Name]; ok {
			return formatErr(kf+".name", "%q is also kinds[%d]; want each kind once", d.Name, j)
		}
		names[d.Name] = k
		if d.Scale > MaxScale {
			return formatErr(kf+".scale", "is %d, more than %d", d.Scale, MaxScale)
		}
		if d.Quantum == 0 || d.Quantum > math.MaxInt64 {
			return formatErr(kf+".quantum", "is %d; want 1 to 2^63-1", d.Quantum)
		}
	}
	return nil
}

// countSamples returns the number of samples, which is the number of
// varints in values (bytes below 0x80 end one), from 1 to room. It runs
// before anything is allocated per sample.
func countSamples(field string, values []byte, room int) (int, error) {
	n := 0
	for _, c := range values {
		if c < 0x80 {
			n++
		}
	}
	switch {
	case n == 0:
		return 0, formatErr(field+".values", "no samples; want at least one")
	case n > room:
		return 0, formatErr(field+".values", "%d samples, more than the %d left of %d in a batch", n, room, MaxSamples)
	}
	return n, nil
}

// decodeKindIndex sets each sample's kind and scale and returns its index
// in kinds (MaxKinds < 256). With one kind, kind_index must be absent and
// every sample has that kind; with more it must be there, name a kind in
// range for each sample, introduce kinds in order of first use and use
// every kind.
func decodeKindIndex(field string, kindIndex *[]byte, kinds []kindDef, samples []Sample) ([]uint8, error) {
	n := len(samples)
	kind := make([]uint8, n)
	if len(kinds) == 1 {
		if kindIndex != nil {
			return nil, formatErr(field+".kind_index", "present with one kind; want it absent")
		}
		for i := range samples {
			samples[i].Kind, samples[i].Scale = kinds[0].Name, kinds[0].Scale
		}
		return kind, nil
	}
	if kindIndex == nil {
		return nil, formatErr(field+".kind_index", "missing (key 6) with %d kinds", len(kinds))
	}
	r := varints{field: field + ".kind_index", b: *kindIndex}
	used := 0
	for i := range samples {
		k, err := r.uvarint(i, n)
		if err != nil {
			return nil, err
		}
		switch {
		case k >= uint64(len(kinds)):
			return nil, formatErr(r.field, "sample %d: kind %d out of range (%d kinds)", i, k, len(kinds))
		case k > uint64(used):
			return nil, formatErr(r.field, "sample %d: kind %d before kind %d; want kinds in order of first use", i, k, used)
		case k == uint64(used):
			used++
		}
		samples[i].Kind = kinds[k].Name
		samples[i].Scale = kinds[k].Scale
		kind[i] = uint8(k)
	}
	if err := r.end(n); err != nil {
		return nil, err
	}
	if used != len(kinds) {
		return nil, formatErr(field+".kinds", "kinds[%d] (%s) has no sample", used, kinds[used].Name)
	}
	return kind, nil
}

// decodeSeqs sets each sample's seq: seq for the first, then one more
// each, or, with seq_gaps, one more plus the gap (which must then not all
// be 0). No seq may overflow uint64.
func decodeSeqs(field string, seq uint64, seqGaps *[]byte, samples []Sample) error {
	n := len(samples)
	samples[0].Seq = seq
	if seqGaps == nil {
		if n-1 > 0 && seq > math.MaxUint64-uint64(n-1) {
			return formatErr(field+".seq", "%d + %d samples overflows uint64", seq, n)
		}
		for i := 1; i < n; i++ {
			samples[i].Seq = samples[i-1].Seq + 1
		}
		return nil
	}
	r := varints{field: field + ".seq_gaps", b: *seqGaps}
	gapped := false
	for i := 1; i < n; i++ {
		gap, err := r.uvarint(i-1, n-1)
		if err != nil {
			return err
		}
		prev := samples[i-1].Seq
		if gap >= math.MaxUint64-prev {
			return formatErr(r.field, "sample %d: seq %d + gap %d + 1 overflows uint64", i, prev, gap)
		}
		samples[i].Seq = prev + gap + 1
		gapped = gapped || gap != 0
	}
	if err := r.end(n - 1); err != nil {
		return err
	}
	if !gapped {
		return formatErr(r.field, "present but the seqs are contiguous; want it absent")
	}
	return nil
}

// decodeTimes sets each sample's time: t0 for the first, then the
// previous plus its dt, every one within 0..MaxTimeMs.
func decodeTimes(field string, t0 int64, dt []byte, samples []Sample) error {
	n := len(samples)
	t := t0
	if t < 0 || t > MaxTimeMs {
		return formatErr(field+".t0", "%d: want Unix milliseconds from 0 to %d", t, MaxTimeMs)
	}
	samples[0].At = time.UnixMilli(t).UTC()
	r := varints{field: field + ".dt", b: dt}
	for i := 1; i < n; i++ {
		d, err := r.varint(i-1, n-1)
		if err != nil {
			return err
		}
		if d > MaxTimeMs-t || d < -t {
			return formatErr(r.field, "sample %d: %d%+d ms is outside 0..%d", i, t, d, MaxTimeMs)
		}
		t += d
		samples[i].At = time.UnixMilli(t).UTC()
	}
	return r.end(n - 1)
}

// decodeValues sets each sample's value: the previous value of its kind
// (0 before the first) plus its step times the kind's quantum, in int64.
// Each quantum must be the gcd of its kind's steps, as Encode chose it.
func decodeValues(field string, values []byte, kinds []kindDef, kind []uint8, samples []Sample) error {
	n := len(samples)
	r := varints{field: field + ".values", b: values}
	last := make([]int64, len(kinds))
	gcd := make([]uint64, len(kinds))
	for i := range samples {
		k := kind[i]
		d, err := r.varint(i, n)
		if err != nil {
			return err
		}
		q := int64(kinds[k].Quantum)
		if d > math.MaxInt64/q || d < math.MinInt64/q {
			return formatErr(r.field, "sample %d: step %d x quantum %d overflows int64", i, d, q)
		}
		v, ok := add(last[k], d*q)
		if !ok {
			return formatErr(r.field, "sample %d: %d%+d overflows int64", i, last[k], d*q)
		}
		samples[i].Value, last[k] = v, v
		gcd[k] = gcdU(gcd[k], absU(d))
	}
	if err := r.end(n); err != nil {
		return err
	}
	for k, g := range gcd {
		if g != 1 && !(g == 0 && kinds[k].Quantum == 1) {
			return formatErr(fmt.Sprintf("%s.kinds[%d].quantum", field, k), "%d is not the gcd of the steps (they share %d more)", kinds[k].Quantum, g)
		}
	}
	return nil
}

func fromMillis(field string, ms int64) (time.Time, error) {
	if ms < 0 || ms > MaxTimeMs {
		return time.Time{}, formatErr(field, "%d: want Unix milliseconds from 0 to %d", ms, MaxTimeMs)
	}
	return time.UnixMilli(ms).UTC(), nil
}

// varints reads the varints of one byte-string field, strictly.
type varints struct {
	field string
	b     []byte
	read  int
}

// uvarint reads varint i of want.
func (r *varints) uvarint(i, want int) (uint64, error) {
	v, n := binary.Uvarint(r.b)
	switch {
	case n == 0:
		return 0, formatErr(r.field, "has %d varints; want %d", i, want)
	case n < 0:
		return 0, formatErr(r.field, "varint %d overflows 64 bits", i)
	case n > 1 && r.b[n-1] == 0:
		return 0, formatErr(r.field, "varint %d is not minimal", i)
	}
	r.b = r.b[n:]
	r.read++
	return v, nil
}

// varint reads zigzag varint i of want.
func (r *varints) varint(i, want int) (int64, error) {
	u, err := r.uvarint(i, want)
	return int64(u>>1) ^ -int64(u&1), err
}

// end checks nothing follows the last varint.
func (r *varints) end(want int) error {
	if len(r.b) != 0 {
		return formatErr(r.field, "%d bytes after its %d varints", len(r.b), want)
	}
	return nil
}
