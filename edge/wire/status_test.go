package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// testdata/status.json, written by edge/status's real report code, is
// exactly GatewayStatus: every key is a field (strict decode) and the
// value encodes back to the same bytes, so the console, which decodes the
// same file in its tests, reads what the agent serves.
func TestStatusGoldenIsGatewayStatus(t *testing.T) {
	b, err := os.ReadFile("testdata/status.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var st GatewayStatus
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("testdata/status.json: %v", err)
	}
	var again bytes.Buffer
	enc := json.NewEncoder(&again)
	enc.SetIndent("", "  ")
	if err := enc.Encode(st); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), b) {
		t.Errorf("GatewayStatus of testdata/status.json encodes as\n%s\nwant the file's bytes", again.Bytes())
	}
	if st.Gateway == "" || len(st.Bowls) == 0 || !st.MQTT.Connected || st.Acks.Wire == "" {
		t.Errorf("testdata/status.json = %+v; want every part filled in", st)
	}
}
