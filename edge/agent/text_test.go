package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// A fault detail with control characters and invalid UTF-8 from the MCU
// becomes a bowl.device_fault whose detail passes wire.CheckText with
// wire.MaxDetailLen, the check ingest applies (wire.Decode of wire.DeviceFault), and
// keeps its readable parts in place.
func TestSinkCleansFaultDetail(t *testing.T) {
	const d = "\uFFFD"
	tests := []struct{ name, in, want string }{
		{"plain", "load cell open", "load cell open"},
		{"tab and newline kept", "a\tb\nc", "a\tb\nc"},
		{"C0 controls and DEL", "cell\x00open\x1b[31m\r\x7f", "cell" + d + "open" + d + "[31m" + d + d},
		{"invalid UTF-8", "ok\xff\xfe end \xe2\x82", "ok" + d + d + " end " + d + d},
		{"C1 controls and noncharacters", "x\u0085y\uFFFEz\uFFFF", "x" + d + "y" + d + "z" + d},
		{"literal U+FFFD and other scripts kept", "Wägezelle \uFFFD 秤", "Wägezelle \uFFFD 秤"},
		{"bounded at a character boundary", strings.Repeat("é", 300), strings.Repeat("é", wire.MaxDetailLen/2)},
		{"bounded after replacement", strings.Repeat("\x01", 200), strings.Repeat(d, wire.MaxDetailLen/3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &memOutbox{}
			s := newSink(t, m)
			rec := bridge.Record{Device: "bowl-1", Seq: 7, At: t0, Body: frame.Fault{Code: frame.FaultLoadCell, Detail: tt.in}}
			if err := s.Deliver(context.Background(), []bridge.Record{rec}); err != nil {
				t.Fatal(err)
			}
			if len(m.entries) != 1 {
				t.Fatalf("stored %d entries; want one bowl.device_fault", len(m.entries))
			}
			var data struct {
				Code   int    `json:"code"`
				Detail string `json:"detail"`
			}
			if err := json.Unmarshal(m.entries[0].Data, &data); err != nil {
				t.Fatalf("fault data %s: %v", m.entries[0].Data, err)
			}
			if err := wire.CheckText("detail", data.Detail, wire.MaxDetailLen); err != nil {
				t.Errorf("detail of fault(%q) refused by ingest's check: %v", tt.in, err)
			}
			if data.Detail != tt.want {
				t.Errorf("detail of fault(%q) = %q; want %q", tt.in, data.Detail, tt.want)
			}
		})
	}
}
