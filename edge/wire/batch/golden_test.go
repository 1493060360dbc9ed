package batch

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

var update = flag.Bool("update", false, "rewrite ../testdata/"+GoldenFile+" from the cases in golden_test.go")

const testdata = "../testdata"

// TestGolden holds Decode and Encode to the golden bytes: an accepted
// payload decodes to its batch and inflates to its CBOR, which Encode of
// the batch writes exactly; a refused one fails with its field and
// problem.
func TestGolden(t *testing.T) {
	if *update {
		writeGolden(t)
	}
	gs, err := LoadGolden(testdata)
	if err != nil {
		t.Fatal(err)
	}
	accepted, refused := 0, 0
	for _, g := range gs {
		t.Run(g.Name, func(t *testing.T) {
			got, err := Decode(g.Payload)
			if g.Batch == nil {
				refused++
				var fe *FormatError
				if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) {
					t.Fatalf("Decode = %v; want a *FormatError", err)
				}
				if fe.Field != g.RejectField || !strings.Contains(fe.Problem, g.RejectProblem) {
					t.Errorf("Decode error field %q problem %q; want field %q problem containing %q", fe.Field, fe.Problem, g.RejectField, g.RejectProblem)
				}
				return
			}
			accepted++
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, *g.Batch) {
				t.Errorf("Decode =\n%+v\nwant\n%+v", got, *g.Batch)
			}
			if inflated, err := inflate(g.Payload[1:]); err != nil || !bytes.Equal(inflated, g.CBOR) {
				t.Errorf("payload inflates to %x (%v); want cbor_hex %x", inflated, err, g.CBOR)
			}
			enc, err := encodeCBOR(*g.Batch)
			if err != nil || !bytes.Equal(enc, g.CBOR) {
				t.Errorf("Encode's CBOR = %x (%v); want cbor_hex %x", enc, err, g.CBOR)
			}
		})
	}
	if accepted < 3 || refused < 10 {
		t.Errorf("%d accepted and %d refused golden batches; want at least 3 and 10", accepted, refused)
	}
}

// goldenCase is a case of the generator: an accepted batch, or a payload
// made by hand with the field and problem Decode must give.
type goldenCase struct {
	name    string
	batch   *Batch
	payload []byte
	field   string
	problem string
}

var gt0 = time.Date(2026, 11, 29, 11, 59, 0, 0, time.UTC)

func at(ms int) time.Time { return gt0.Add(time.Duration(ms) * time.Millisecond) }

// goldenBase is the valid batch most refused payloads are mutations of.
func goldenBase() Batch {
	return Batch{Outbox: "01jdx3k7f9q2v6w8", SentAt: at(60_000), Things: []Series{{Thing: "gw-1:kitchen", Samples: []Sample{
		{Seq: 7, At: at(0), Kind: "weight_g", Value: 412500, Scale: 3},
		{Seq: 8, At: at(20), Kind: "weight_g", Value: 412600, Scale: 3},
		{Seq: 9, At: at(40), Kind: "weight_g", Value: 412400, Scale: 3},
	}}}}
}

func goldenCases(t *testing.T) []goldenCase {
	var cs []goldenCase
	ok := func(name string, b Batch) { cs = append(cs, goldenCase{name: name, batch: &b}) }
	bad := func(name string, p []byte, field, problem string) {
		cs = append(cs, goldenCase{name: name, payload: p, field: field, problem: problem})
	}

	ok("one bowl, 50 Hz weight in 0.1 g steps, contiguous seqs", goldenBase())
	var fifty []Sample
	for i := range 50 {
		fifty = append(fifty, Sample{Seq: uint64(1000 + i), At: at(20 * i), Kind: "weight_g", Value: 250_000 - int64(i%3)*100, Scale: 3})
	}
	ok("one second of one bowl at 50 Hz", Batch{Outbox: "ob-1", SentAt: at(1000), Things: []Series{{Thing: "gw-7", Samples: fifty}}})
	ok("two bowls, several kinds, seq gaps, a clock step back, a negative value", Batch{Outbox: "ob-2", SentAt: at(60_000), Things: []Series{
		{Thing: "gw-2:left", Samples: []Sample{
			{Seq: 1, At: at(0), Kind: "weight_g", Value: 100, Scale: 3},
			{Seq: 2, At: at(0), Kind: "temperature_c", Value: -325, Scale: 2},
			{Seq: 5, At: at(20), Kind: "weight_g", Value: 300, Scale: 3},
			{Seq: 6, At: at(-980), Kind: "battery_pct", Value: 87, Scale: 0},
			{Seq: 300, At: at(1000), Kind: "weight_g", Value: 0, Scale: 3},
		}},
		{Thing: "gw-2:right", Samples: []Sample{
			{Seq: 4294967296, At: at(5), Kind: "lid_open", Value: 1, Scale: 0},
			{Seq: 4294967297, At: at(10), Kind: "lid_open", Value: 0, Scale: 0},
		}},
	}})
	ok("extremes: epoch, the last millisecond of 9999, int64 bounds, scale 9", Batch{Outbox: "a", SentAt: time.UnixMilli(MaxTimeMs).UTC(), Things: []Series{
		{Thing: "b", Samples: []Sample{
			{Seq: 1, At: time.UnixMilli(0).UTC(), Kind: "x", Value: math.MaxInt64, Scale: 0},
			{Seq: math.MaxUint64, At: time.UnixMilli(MaxTimeMs).UTC(), Kind: "x", Value: math.MaxInt64 - 1, Scale: 0},
		}},
		{Thing: "c", Samples: []Sample{
			{Seq: 1, At: time.UnixMilli(0).UTC(), Kind: "y", Value: -1, Scale: 9},
			{Seq: 2, At: time.UnixMilli(0).UTC(), Kind: "z", Value: math.MinInt64 + 1, Scale: 0},
		}},
	}})
	ok("no things", Batch{Outbox: "ob-3", SentAt: at(0), Things: []Series{}})

	valid := mustEncode(t, goldenBase())
	bad("empty payload", []byte{}, "format", "empty payload")
	bad("a v1 JSON payload", []byte(`{"v":1,"thing":"gw-1","seq":1,"samples":[]}`), "format", "byte 0 is 0x7b; want 0x02")
	bad("format 3", append([]byte{3}, valid[1:]...), "format", "byte 0 is 0x03")
	bad("truncated deflate", valid[:len(valid)-3], "deflate", "")
	bad("a byte after the deflate stream", append(bytes.Clone(valid), 0), "deflate", "1 bytes after the end of the stream")
	bad("deflate bomb: 9 MiB of zeros", mustDeflate(t, make([]byte, 9<<20)), "deflate", "inflates to more than 8388608 bytes")
	bad("not CBOR: raw text", mustDeflate(t, []byte("hello")), "cbor", "")
	bad("two CBOR maps", mustDeflate(t, append(mustCBOR(t, valid), mustCBOR(t, valid)...)), "cbor", "extraneous data")
	bad("CBOR array instead of map", mustDeflate(t, mustMarshal(t, []int{1, 2})), "cbor", "")

	m := func(f func(b map[any]any)) []byte { return mutate(t, valid, f) }
	series := func(b map[any]any) map[any]any { return b[uint64(2)].([]any)[0].(map[any]any) }
	bad("unknown batch key 3", m(func(b map[any]any) { b[uint64(3)] = 1 }), "cbor", "unknown field")
	bad("unknown series key 8", m(func(b map[any]any) { series(b)[uint64(8)] = 1 }), "cbor", "unknown field")
	bad("text key \"0\"", m(func(b map[any]any) { b["0"] = b[uint64(0)]; delete(b, uint64(0)) }), "cbor", "")
	bad("missing outbox", m(func(b map[any]any) { delete(b, uint64(0)) }), "outbox", "missing (key 0)")
	bad("missing sent_at", m(func(b map[any]any) { delete(b, uint64(1)) }), "sent_at", "missing (key 1)")
	bad("missing things", m(func(b map[any]any) { delete(b, uint64(2)) }), "things", "missing (key 2)")
	bad("sent_at as text", m(func(b map[any]any) { b[uint64(1)] = "2026-11-29T12:00:00Z" }), "cbor", "")
	bad("sent_at after 9999", m(func(b map[any]any) { b[uint64(1)] = uint64(MaxTimeMs + 1) }), "sent_at", "want Unix milliseconds from 0 to")
	bad("outbox with a slash", m(func(b map[any]any) { b[uint64(0)] = "ob/1" }), "outbox", "want a name")
	bad("outbox of 65 bytes", m(func(b map[any]any) { b[uint64(0)] = strings.Repeat("o", 65) }), "outbox", "at most 64 bytes")
	bad("thing with a plus", m(func(b map[any]any) { series(b)[uint64(0)] = "gw-1:+" }), "things[0].thing", "must not contain '+'")
	bad("the same thing twice", m(func(b map[any]any) { b[uint64(2)] = []any{series(b), series(b)} }), "things[1].thing", "want each thing once")
	bad("1025 things", m(func(b map[any]any) {
		var ss []any
		for range MaxThings + 1 {
			ss = append(ss, series(b))
		}
		b[uint64(2)] = ss
	}), "things", "1025 series, more than 1024")
	bad("seq 0", m(func(b map[any]any) { series(b)[uint64(1)] = uint64(0) }), "things[0].seq", "is 0")
	bad("seqs overflow uint64", m(func(b map[any]any) { series(b)[uint64(1)] = uint64(math.MaxUint64 - 1) }), "things[0].seq", "overflows uint64")
	bad("a seq gap that overflows uint64", m(func(b map[any]any) { series(b)[uint64(2)] = uvarints(math.MaxUint64-8, 0) }), "things[0].seq_gaps", "overflows uint64")
	bad("seq_gaps of contiguous seqs", m(func(b map[any]any) { series(b)[uint64(2)] = uvarints(0, 0) }), "things[0].seq_gaps", "want it absent")
	bad("seq_gaps one short", m(func(b map[any]any) { series(b)[uint64(2)] = uvarints(1) }), "things[0].seq_gaps", "has 1 varints; want 2")
	bad("negative t0", m(func(b map[any]any) { series(b)[uint64(3)] = int64(-1) }), "things[0].t0", "want Unix milliseconds")
	bad("dt one short", m(func(b map[any]any) { series(b)[uint64(4)] = varints64(20) }), "things[0].dt", "has 1 varints; want 2")
	bad("dt one too many", m(func(b map[any]any) { series(b)[uint64(4)] = varints64(20, 20, 20) }), "things[0].dt", "1 bytes after its 2 varints")
	bad("dt before 1970", m(func(b map[any]any) { series(b)[uint64(4)] = varints64(20, -1e15) }), "things[0].dt", "is outside")
	bad("no kinds", m(func(b map[any]any) { series(b)[uint64(5)] = []any{} }), "things[0].kinds", "empty")
	bad("kind in capitals", m(func(b map[any]any) { series(b)[uint64(5)] = []any{[]any{"Weight_g", 3, 100}} }), "things[0].kinds[0].name", "must start with a lowercase letter")
	bad("kind of two elements", m(func(b map[any]any) { series(b)[uint64(5)] = []any{[]any{"weight_g", 3}} }), "cbor", "")
	bad("scale 10", m(func(b map[any]any) { series(b)[uint64(5)] = []any{[]any{"weight_g", 10, 100}} }), "things[0].kinds[0].scale", "is 10, more than 9")
	bad("quantum 0", m(func(b map[any]any) { series(b)[uint64(5)] = []any{[]any{"weight_g", 3, 0}} }), "things[0].kinds[0].quantum", "is 0")
	bad("quantum not the gcd", m(func(b map[any]any) {
		series(b)[uint64(5)] = []any{[]any{"weight_g", 3, 50}}
		series(b)[uint64(7)] = varints64(8250, 2, -4)
	}), "things[0].kinds[0].quantum", "is not the gcd")
	bad("kind_index with one kind", m(func(b map[any]any) { series(b)[uint64(6)] = uvarints(0, 0, 0) }), "things[0].kind_index", "present with one kind")
	twoKinds := func(idx []byte) func(b map[any]any) {
		return func(b map[any]any) {
			series(b)[uint64(5)] = []any{[]any{"weight_g", 3, 100}, []any{"temperature_c", 2, 1}}
			series(b)[uint64(6)] = idx
		}
	}
	bad("kind_index missing with two kinds", m(twoKinds(nil)), "things[0].kind_index", "missing (key 6)")
	bad("kind index out of range", m(twoKinds(uvarints(0, 2, 1))), "things[0].kind_index", "kind 2 out of range")
	bad("kinds not in order of first use", m(twoKinds(uvarints(1, 0, 0))), "things[0].kind_index", "want kinds in order of first use")
	bad("a kind with no sample", m(twoKinds(uvarints(0, 0, 0))), "things[0].kinds", "kinds[1] (temperature_c) has no sample")
	bad("no values", m(func(b map[any]any) { series(b)[uint64(7)] = []byte{} }), "things[0].values", "no samples")
	bad("a value varint of 11 bytes", m(func(b map[any]any) {
		series(b)[uint64(7)] = append(varints64(4125, 1), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)
	}), "things[0].values", "overflows 64 bits")
	bad("a value varint not minimal", m(func(b map[any]any) { series(b)[uint64(7)] = append(varints64(4125, 1), 0x84, 0x00) }), "things[0].values", "varint 2 is not minimal")
	bad("values that overflow int64", m(func(b map[any]any) {
		series(b)[uint64(5)] = []any{[]any{"weight_g", 3, 1}}
		series(b)[uint64(7)] = varints64(math.MaxInt64, 1, -1)
	}), "things[0].values", "overflows int64")
	bad("more samples than a batch holds", m(func(b map[any]any) {
		s := series(b)
		s[uint64(4)] = make([]byte, MaxSamples)
		s[uint64(7)] = append([]byte{0x02}, make([]byte, MaxSamples)...)
	}), "things[0].values", "more than the 262144 left")
	bad("a CBOR tag", mustDeflate(t, append([]byte{0xc1}, mustCBOR(t, valid)...)), "cbor", "")
	bad("an indefinite-length map", mustDeflate(t, indefinite(mustCBOR(t, valid))), "cbor", "")
	bad("a duplicate key", mustDeflate(t, duplicateOutbox(mustCBOR(t, valid))), "cbor", "duplicate map key")
	return cs
}

func writeGolden(t *testing.T) {
	t.Helper()
	var files []goldenJSON
	for _, c := range goldenCases(t) {
		f := goldenJSON{Name: c.name, RejectField: c.field, RejectProblem: c.problem}
		if c.batch != nil {
			p := mustEncode(t, *c.batch)
			got, err := Decode(p)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			f.PayloadHex, f.CBORHex, f.Batch = hex.EncodeToString(p), hex.EncodeToString(mustCBOR(t, p)), &got
		} else {
			f.PayloadHex = hex.EncodeToString(c.payload)
			if f.RejectProblem == "" {
				_, err := Decode(c.payload)
				var fe *FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("%s: Decode = %v; want a *FormatError", c.name, err)
				}
				f.RejectProblem = fe.Problem
			}
		}
		files = append(files, f)
	}
	var buf bytes.Buffer
	buf.WriteString("[\n")
	for i, f := range files {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		if i < len(files)-1 {
			buf.WriteString(",")
		}
		buf.WriteString("\n")
	}
	buf.WriteString("]\n")
	if err := os.WriteFile(filepath.Join(testdata, GoldenFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustEncode(t testing.TB, b Batch) []byte {
	t.Helper()
	p, err := Encode(b)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return p
}

func mustDeflate(t testing.TB, data []byte) []byte {
	t.Helper()
	p, err := deflate(data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mustCBOR returns the inflated CBOR of payload p.
func mustCBOR(t testing.TB, p []byte) []byte {
	t.Helper()
	data, err := inflate(p[1:])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := encMode.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mutate decodes the CBOR of payload p into generic maps, lets f change
// them, and encodes the result again.
func mutate(t testing.TB, p []byte, f func(map[any]any)) []byte {
	t.Helper()
	var v map[any]any
	if err := cbor.Unmarshal(mustCBOR(t, p), &v); err != nil {
		t.Fatal(err)
	}
	f(v)
	return mustDeflate(t, mustMarshal(t, v))
}

func uvarints(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = appendUvarint(b, v)
	}
	return b
}

func varints64(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = appendUvarint(b, uint64(v<<1)^uint64(v>>63))
	}
	return b
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// indefinite rewrites a definite map head (major type 5, 1-23 pairs) as an
// indefinite-length map.
func indefinite(data []byte) []byte {
	out := append([]byte{0xbf}, data[1:]...)
	return append(out, 0xff)
}

// duplicateOutbox adds a second outbox key (0) to the top map, which Encode
// writes first.
func duplicateOutbox(data []byte) []byte {
	n := int(data[0] & 0x1f)
	out := []byte{0xa0 | byte(n+1), 0x00, 0x61, 'x'}
	return append(out, data[1:]...)
}
