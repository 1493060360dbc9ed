package frame

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the stream decoder and to Unmarshal.
// It checks that nothing panics, that the decoder's memory stays bounded
// (its buffers are fixed arrays; every frame it returns re-encodes within
// MaxEncoded) and that decoding is canonical: a raw frame Unmarshal
// accepts is exactly what Marshal produces for the result.
// Seeded from testdata/vectors.json. Run: go test -run=X -fuzz=FuzzDecode -fuzztime=10s ./firmware-bridge/frame
func FuzzDecode(f *testing.F) {
	v := loadVectors(f)
	for _, gv := range v.Valid {
		w, _ := hex.DecodeString(gv.WireHex)
		r, _ := hex.DecodeString(gv.RawHex)
		f.Add(w)
		f.Add(r)
	}
	for _, iv := range v.Invalid {
		w, _ := hex.DecodeString(iv.WireHex)
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDecoder(bytes.NewReader(data))
		for {
			fr, err := d.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Next() error %v; want only io.EOF from a bytes.Reader", err)
			}
			enc, err := Encode(fr)
			if err != nil || len(enc) > MaxEncoded+1 {
				t.Fatalf("re-encode of decoded %+v: %d bytes, %v", fr, len(enc), err)
			}
		}
		st := d.Stats()
		if st.Bytes != uint64(len(data)) {
			t.Fatalf("Stats().Bytes = %d; want %d", st.Bytes, len(data))
		}
		fr, err := Unmarshal(data)
		if err != nil {
			if _, ok := ReasonOf(err); !ok {
				t.Fatalf("Unmarshal error %v has no Reason", err)
			}
			return
		}
		again, err := Marshal(fr)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("Marshal(Unmarshal(% x)) = % x, %v; want the input", data, again, err)
		}
	})
}
