package batch

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// GoldenFile is the name of the golden batches in edge/wire/testdata.
const GoldenFile = "batches.json"

// Golden is one golden batch payload (edge/wire/testdata/batches.json,
// described in testdata/README.md) and what Decode must make of it.
type Golden struct {
	// Name describes the case; unique.
	Name string
	// Payload is the MQTT payload, byte for byte.
	Payload []byte
	// CBOR, for an accepted payload, is its inflated map: Encode(*Batch)
	// must write exactly these bytes before compression (the DEFLATE bytes
	// may change with the Go release; the CBOR may not).
	CBOR []byte
	// Batch, for an accepted payload, is what Decode returns.
	Batch *Batch
	// RejectField and RejectProblem, for a refused payload, are the
	// FormatError's Field and a part of its Problem.
	RejectField, RejectProblem string
}

// goldenJSON is the file form of a Golden.
type goldenJSON struct {
	Name          string `json:"name"`
	PayloadHex    string `json:"payload_hex"`
	CBORHex       string `json:"cbor_hex,omitempty"`
	Batch         *Batch `json:"batch,omitempty"`
	RejectField   string `json:"reject_field,omitempty"`
	RejectProblem string `json:"reject_problem,omitempty"`
}

// LoadGolden reads GoldenFile from dir (edge/wire/testdata). It refuses
// unknown keys, bad hex, repeated names, and a case that is not clearly
// either accepted (cbor_hex and batch) or refused (reject_field and
// reject_problem).
func LoadGolden(dir string) ([]Golden, error) {
	path := filepath.Join(dir, GoldenFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("golden batches: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var files []goldenJSON
	if err := dec.Decode(&files); err != nil {
		return nil, fmt.Errorf("golden batches %s: %w", path, err)
	}
	seen := map[string]bool{}
	out := make([]Golden, 0, len(files))
	for i, f := range files {
		g := Golden{Name: f.Name, Batch: f.Batch, RejectField: f.RejectField, RejectProblem: f.RejectProblem}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("golden batch %d (%q): %s", i, f.Name, fmt.Sprintf(format, args...))
		}
		if f.Name == "" || seen[f.Name] {
			return nil, bad("want a unique name")
		}
		seen[f.Name] = true
		if g.Payload, err = hex.DecodeString(f.PayloadHex); err != nil {
			return nil, bad("payload_hex: %v", err)
		}
		if g.CBOR, err = hex.DecodeString(f.CBORHex); err != nil {
			return nil, bad("cbor_hex: %v", err)
		}
		accepted := f.Batch != nil && f.CBORHex != ""
		refused := f.RejectField != "" && f.RejectProblem != ""
		if accepted == refused || (accepted && (f.RejectField != "" || f.RejectProblem != "")) || (refused && (f.Batch != nil || f.CBORHex != "")) {
			return nil, bad("want either cbor_hex and batch, or reject_field and reject_problem")
		}
		out = append(out, g)
	}
	return out, nil
}
