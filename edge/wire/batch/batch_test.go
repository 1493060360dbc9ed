package batch

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"

	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestScaled(t *testing.T) {
	for _, c := range []struct {
		v     float64
		value int64
		scale uint8
		err   string
	}{
		{412.5, 4125, 1, ""},
		{412.512, 412512, 3, ""},
		{0.1, 1, 1, ""},
		{-3.25, -325, 2, ""},
		{3712, 3712, 0, ""},
		{0, 0, 0, ""},
		{math.Copysign(0, -1), 0, 0, ""},
		{1e-7, 1, 7, ""},
		{1e-9, 1, 9, ""},
		{1e-10, 0, 0, "more than 9 decimals"},
		{1.0 / 3, 0, 0, "more than 9 decimals"},
		{1e18, 1e18, 0, ""},
		{1e19, 0, 0, "beyond int64"},
		{math.NaN(), 0, 0, "not a finite number"},
		{math.Inf(1), 0, 0, "not a finite number"},
		{9007199254740.993, 0, 0, ""}, // shortest form has 3 decimals but exceeds 2^53 at that scale
	} {
		value, scale, err := Scaled(c.v)
		if c.v == 9007199254740.993 {
			if err == nil && (Sample{Value: value, Scale: scale}).Float() != c.v {
				t.Errorf("Scaled(%v) = %d, %d; Float gives %v back", c.v, value, scale, Sample{Value: value, Scale: scale}.Float())
			}
			continue
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Scaled(%v) = %d, %d, %v; want an error containing %q", c.v, value, scale, err, c.err)
			}
			continue
		}
		if err != nil || value != c.value || scale != c.scale {
			t.Errorf("Scaled(%v) = %d, %d, %v; want %d, %d", c.v, value, scale, err, c.value, c.scale)
		}
		if f := (Sample{Value: value, Scale: scale}).Float(); f != c.v {
			t.Errorf("Float of Scaled(%v) = %v; want %v", c.v, f, c.v)
		}
	}
}

// TestScaledRoundTripsMilligrams checks Float(Scaled(mg/1000)) == mg/1000
// for every gram value with milligram resolution the sink makes, over a
// wide range.
func TestScaledRoundTripsMilligrams(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		mg := r.Int64N(20_000_000) - 10_000_000
		v := float64(mg) / 1000
		value, scale, err := Scaled(v)
		if err != nil || scale > 3 {
			t.Fatalf("Scaled(%v) = %d, %d, %v; want scale <= 3", v, value, scale, err)
		}
		if got := (Sample{Value: value, Scale: scale}).Float(); got != v {
			t.Fatalf("Float(Scaled(%v)) = %v", v, got)
		}
	}
}

// randomBatch makes a batch of up to n samples with every feature of the
// format: several things and kinds, seq gaps, clock steps both ways,
// mixed scales of one kind, sub-millisecond times.
func randomBatch(r *rand.Rand, n int) Batch {
	kinds := []string{"weight_g", "temperature_c", "battery_pct", "lid_open"}
	b := Batch{Outbox: "ob-" + string(rune('a'+r.IntN(26))), SentAt: time.Unix(1_780_000_000+r.Int64N(1e6), r.Int64N(1e9)), Things: []Series{}}
	things := 1 + r.IntN(4)
	for i := range things {
		s := Series{Thing: "gw-1:bowl-" + string(rune('a'+i))}
		seq := 1 + r.Uint64N(1<<40)
		at := time.UnixMilli(1_780_000_000_000 + r.Int64N(1e9))
		m := 1 + r.IntN(max(1, n/things))
		nk := 1 + r.IntN(len(kinds))
		for range m {
			k := kinds[r.IntN(nk)]
			var value int64
			scale := uint8(r.IntN(4))
			switch r.IntN(4) {
			case 0:
				value = r.Int64N(1e7) - 1e6
			case 1:
				value = (r.Int64N(200) - 100) * 100
			default:
				value = r.Int64N(50) * 100
			}
			s.Samples = append(s.Samples, Sample{Seq: seq, At: at, Kind: k, Value: value, Scale: scale})
			seq++
			if r.IntN(20) == 0 {
				seq += r.Uint64N(1000)
			}
			at = at.Add(time.Duration(20+r.IntN(3)-1)*time.Millisecond + time.Duration(r.IntN(1000)))
			if r.IntN(100) == 0 {
				at = at.Add(-time.Duration(r.IntN(5000)) * time.Millisecond)
			}
		}
		b.Things = append(b.Things, s)
	}
	return b
}

// sameBatch reports how got (decoded) differs from want (encoded): times
// to the millisecond in UTC, values equal as numbers.
func sameBatch(got, want Batch) string {
	if got.Outbox != want.Outbox || !got.SentAt.Equal(want.SentAt.Truncate(time.Millisecond)) || got.SentAt.Location() != time.UTC {
		return "outbox or sent_at"
	}
	if len(got.Things) != len(want.Things) {
		return "number of things"
	}
	for i, gs := range got.Things {
		ws := want.Things[i]
		if gs.Thing != ws.Thing || len(gs.Samples) != len(ws.Samples) {
			return "thing " + ws.Thing
		}
		for j, g := range gs.Samples {
			w := ws.Samples[j]
			gv, ok1 := rescale(g.Value, MaxScale-g.Scale)
			wv, ok2 := rescale(w.Value, MaxScale-w.Scale)
			if g.Seq != w.Seq || !g.At.Equal(w.At.Truncate(time.Millisecond)) || g.Kind != w.Kind || g.Float() != w.Float() || ok1 != ok2 || gv != wv || g.Scale < w.Scale {
				return "sample " + ws.Thing + " " + string(rune('0'+j%10))
			}
		}
	}
	return ""
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 300 {
		b := randomBatch(r, 1+r.IntN(3000))
		p, err := Encode(b)
		if err != nil {
			t.Fatalf("case %d: Encode: %v", i, err)
		}
		if !IsBatch(p) {
			t.Fatalf("case %d: IsBatch(Encode) = false", i)
		}
		got, err := Decode(p)
		if err != nil {
			t.Fatalf("case %d: Decode(Encode): %v", i, err)
		}
		if d := sameBatch(got, b); d != "" {
			t.Fatalf("case %d: Decode(Encode(b)) differs in %s", i, d)
		}
		// A decoded batch re-encodes to the same CBOR.
		c1, _ := encodeCBOR(b)
		c2, err := encodeCBOR(got)
		if err != nil || string(c1) != string(c2) {
			t.Fatalf("case %d: Encode(Decode(Encode(b))) CBOR differs (%v)", i, err)
		}
	}
}

func TestEncodeRefuses(t *testing.T) {
	good := func() Batch { return goldenBase() }
	for _, c := range []struct {
		name  string
		edit  func(*Batch)
		field string
	}{
		{"empty outbox", func(b *Batch) { b.Outbox = "" }, "outbox"},
		{"zero sent_at", func(b *Batch) { b.SentAt = time.Time{} }, "sent_at"},
		{"bad thing", func(b *Batch) { b.Things[0].Thing = "a b" }, "things[0].thing"},
		{"empty series", func(b *Batch) { b.Things[0].Samples = nil }, "things[0].values"},
		{"same thing twice", func(b *Batch) { b.Things = append(b.Things, b.Things[0]) }, "things[1].thing"},
		{"seq 0", func(b *Batch) { b.Things[0].Samples[0].Seq = 0 }, "things[0].seq"},
		{"seq repeated", func(b *Batch) { b.Things[0].Samples[1].Seq = 7 }, "things[0].samples[1].seq"},
		{"bad kind", func(b *Batch) { b.Things[0].Samples[2].Kind = "Weight" }, "things[0].samples[2].kind"},
		{"scale 10", func(b *Batch) { b.Things[0].Samples[2].Scale = 10 }, "things[0].samples[2].scale"},
		{"time before 1970", func(b *Batch) { b.Things[0].Samples[2].At = time.UnixMilli(-1) }, "things[0].samples[2].at"},
		{"rescale overflow", func(b *Batch) {
			b.Things[0].Samples[0].Value, b.Things[0].Samples[0].Scale = math.MaxInt64/10, 0
			b.Things[0].Samples[1].Scale = 1
		}, "things[0].samples[0].value"},
	} {
		b := good()
		c.edit(&b)
		_, err := Encode(b)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrFormat) {
			t.Errorf("%s: Encode = %v; want a *FormatError on %s", c.name, err, c.field)
		}
	}
}

func TestDecodeRefusesAnOversizePayload(t *testing.T) {
	p := make([]byte, wire.MaxPayload+1)
	p[0] = Format
	_, err := Decode(p)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Field != "payload" {
		t.Errorf("Decode(%d bytes) = %v; want a payload error", len(p), err)
	}
}

func TestSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i, maxBytes := range []int{300, 1000, 4000, 20000, wire.MaxPayload} {
		b := randomBatch(r, 20000)
		ps, err := Split(b, maxBytes)
		if err != nil {
			t.Fatalf("case %d: Split(%d): %v", i, maxBytes, err)
		}
		// Every sample in exactly one payload, in order.
		joined := Batch{Outbox: b.Outbox, SentAt: b.SentAt, Things: []Series{}}
		for _, p := range ps {
			if len(p) > maxBytes {
				t.Fatalf("case %d: payload of %d bytes; want at most %d", i, len(p), maxBytes)
			}
			d, err := Decode(p)
			if err != nil {
				t.Fatalf("case %d: Decode(Split): %v", i, err)
			}
			joined.SentAt = d.SentAt
			for _, s := range d.Things {
				if n := len(joined.Things); n > 0 && joined.Things[n-1].Thing == s.Thing {
					joined.Things[n-1].Samples = append(joined.Things[n-1].Samples, s.Samples...)
				} else {
					joined.Things = append(joined.Things, s)
				}
			}
		}
		if d := sameBatch(joined, b); d != "" {
			t.Fatalf("case %d: Split(%d) payloads joined differ from the batch in %s", i, maxBytes, d)
		}
		t.Logf("Split(%d samples, %d) = %d payloads", b.Samples(), maxBytes, len(ps))
	}
}

func TestSplitErrors(t *testing.T) {
	b := goldenBase()
	if _, err := Split(b, 10); !errors.Is(err, ErrMaxBytes) {
		t.Errorf("Split(10 bytes) = %v; want ErrMaxBytes", err)
	}
	if _, err := Split(b, wire.MaxPayload+1); !errors.Is(err, ErrMaxBytes) {
		t.Errorf("Split(MaxPayload+1) = %v; want ErrMaxBytes", err)
	}
	b.Things[0].Samples[1].Kind = "Bad"
	if _, err := Split(b, 1000); !errors.Is(err, ErrFormat) {
		t.Errorf("Split(bad kind) = %v; want ErrFormat", err)
	}
	if ps, err := Split(Batch{Outbox: "ob", SentAt: gt0}, 1000); err != nil || len(ps) != 0 {
		t.Errorf("Split(empty) = %d payloads, %v; want none", len(ps), err)
	}
}

// TestSplitHonoursMaxSamples: a batch of more than MaxSamples constant
// readings compresses into one payload's bytes, yet is cut so each payload
// decodes.
func TestSplitHonoursMaxSamples(t *testing.T) {
	testkit.Long(t, "encodes several 262,144-sample batches")
	s := Series{Thing: "gw-1"}
	for i := range MaxSamples + 10 {
		s.Samples = append(s.Samples, Sample{Seq: uint64(i + 1), At: gt0.Add(time.Duration(i) * 20 * time.Millisecond), Kind: "weight_g", Value: 0, Scale: 3})
	}
	ps, err := Split(Batch{Outbox: "ob", SentAt: gt0, Things: []Series{s}}, wire.MaxPayload)
	if err != nil || len(ps) != 2 {
		t.Fatalf("Split = %d payloads, %v; want 2", len(ps), err)
	}
	for _, p := range ps {
		if _, err := Decode(p); err != nil {
			t.Fatal(err)
		}
	}
}

// minuteBatch is a minute of two bowls at 50 Hz with 0.1 g noise steps.
func minuteBatch() Batch {
	r := rand.New(rand.NewPCG(9, 9))
	b := Batch{Outbox: "ob-1", SentAt: gt0.Add(time.Minute)}
	for _, thing := range []string{"gw-1:a", "gw-1:b"} {
		s := Series{Thing: thing}
		v := int64(250_000)
		for i := range 3000 {
			s.Samples = append(s.Samples, Sample{Seq: uint64(i + 1), At: gt0.Add(time.Duration(i) * 20 * time.Millisecond), Kind: "weight_g", Value: v + int64(r.NormFloat64())*100, Scale: 3})
		}
		b.Things = append(b.Things, s)
	}
	return b
}

func BenchmarkEncodeMinute(b *testing.B) {
	m := minuteBatch()
	for b.Loop() {
		if _, err := Encode(m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(6000, "samples/op")
}

func BenchmarkDecodeMinute(b *testing.B) {
	p, err := Encode(minuteBatch())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p))/6000, "bytes/sample")
}
