package frame

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json from the fixtures")

const vectorsPath = "../testdata/vectors.json"

// vectors is the layout of testdata/vectors.json (documented in PROTOCOL.md).
type vectors struct {
	Comment string          `json:"comment"`
	Valid   []validVector   `json:"valid"`
	Invalid []invalidVector `json:"invalid"`
}

type validVector struct {
	Name    string          `json:"name"`
	RawHex  string          `json:"raw_hex"`
	WireHex string          `json:"wire_hex"`
	Frame   json.RawMessage `json:"frame"`
}

type invalidVector struct {
	Name    string `json:"name"`
	WireHex string `json:"wire_hex"`
	Reason  string `json:"reason"`
}

func buildVectors(t *testing.T) vectors {
	t.Helper()
	v := vectors{Comment: "bowl MCU protocol v1 golden vectors; see firmware-bridge/PROTOCOL.md"}
	for _, tc := range sampleFrames {
		raw := mustRaw(tc.f)
		enc, err := Encode(tc.f)
		if err != nil {
			t.Fatalf("Encode(%s): %v", tc.name, err)
		}
		j, err := json.Marshal(tc.f)
		if err != nil {
			t.Fatalf("json.Marshal(%s): %v", tc.name, err)
		}
		v.Valid = append(v.Valid, validVector{tc.name, hex.EncodeToString(raw), hex.EncodeToString(enc), j})
	}
	for _, tc := range invalidFrames() {
		v.Invalid = append(v.Invalid, invalidVector{tc.name, hex.EncodeToString(tc.wire), tc.reason.String()})
	}
	return v
}

func loadVectors(t testing.TB) vectors {
	t.Helper()
	b, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatalf("read golden vectors: %v (run go test -run TestGolden -update)", err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("parse %s: %v", vectorsPath, err)
	}
	return v
}

func TestGoldenVectors(t *testing.T) {
	if *update {
		b, err := json.MarshalIndent(buildVectors(t), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.FromSlash(vectorsPath), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v := loadVectors(t)
	if len(v.Valid) != len(sampleFrames) || len(v.Invalid) != len(invalidFrames()) {
		t.Fatalf("vectors: %d valid, %d invalid; want %d, %d (run with -update after changing fixtures)",
			len(v.Valid), len(v.Invalid), len(sampleFrames), len(invalidFrames()))
	}
	for _, gv := range v.Valid {
		t.Run(gv.Name, func(t *testing.T) {
			var want Frame
			if err := json.Unmarshal(gv.Frame, &want); err != nil {
				t.Fatalf("frame json of %s: %v", gv.Name, err)
			}
			raw, _ := hex.DecodeString(gv.RawHex)
			got, err := Unmarshal(raw)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Unmarshal(%s) = %+v, %v; want %+v", gv.RawHex, got, err, want)
			}
			enc, err := Encode(want)
			if err != nil || hex.EncodeToString(enc) != gv.WireHex {
				t.Fatalf("Encode(%s) = %x, %v; want %s", gv.Name, enc, err, gv.WireHex)
			}
			j, _ := json.Marshal(got)
			if !jsonEqual(t, j, gv.Frame) {
				t.Fatalf("json of decoded %s = %s; want %s", gv.Name, j, gv.Frame)
			}
		})
	}
	for _, iv := range v.Invalid {
		t.Run(iv.Name, func(t *testing.T) {
			w, _ := hex.DecodeString(iv.WireHex)
			d := NewDecoder(bytes.NewReader(w))
			var gotReason Reason = numReasons
			d.OnDrop = func(r Reason, _ error) { gotReason = r }
			if f, err := d.Next(); err == nil {
				t.Fatalf("Decoder.Next(%s) = %+v; want a drop", iv.Name, f)
			}
			if gotReason.String() != iv.Reason {
				t.Fatalf("drop reason of %s = %v; want %s", iv.Name, gotReason, iv.Reason)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}
