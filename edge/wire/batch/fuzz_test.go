package batch

import (
	"errors"
	"reflect"
	"runtime"
	"testing"
)

// maxDecodeAlloc bounds what one Decode may allocate, whatever the input:
// the inflated CBOR (MaxInflated), its byte strings once more, and
// MaxSamples samples, with room for the codec's own bookkeeping.
const maxDecodeAlloc = 64 << 20

// FuzzDecode feeds Decode arbitrary payloads, seeded with the golden ones.
// Decode must not panic, must allocate at most maxDecodeAlloc, must fail
// only with a *FormatError, and what it accepts must encode again to a
// payload that decodes to the same batch.
func FuzzDecode(f *testing.F) {
	gs, err := LoadGolden(testdata)
	if err != nil {
		f.Fatal(err)
	}
	for _, g := range gs {
		f.Add(g.Payload)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b, err := Decode(p)
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > maxDecodeAlloc {
			t.Fatalf("Decode of %d bytes allocated %d bytes; want at most %d", len(p), n, maxDecodeAlloc)
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) {
				t.Fatalf("Decode error %v (%T); want a *FormatError", err, err)
			}
			return
		}
		again, err := Encode(b)
		if err != nil {
			t.Fatalf("Encode(Decode(p)): %v", err)
		}
		back, err := Decode(again)
		if err != nil || !reflect.DeepEqual(back, b) {
			t.Fatalf("Decode(Encode(Decode(p))) = %+v, %v; want %+v", back, err, b)
		}
	})
}
