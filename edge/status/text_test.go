package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

func TestBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {3 << 20, "3.0 MiB"}, {5 << 30, "5.0 GiB"}, {-1, "-1 B"}} {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q; want %q", tt.n, got, tt.want)
		}
	}
}

func TestWriteTextSaysWhatIsWrong(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	r := wire.GatewayStatus{Gateway: "gw-1", Disk: wire.DiskStatus{FSFreeBytes: -1, DiskLimited: true},
		MQTT:  forwardDown(),
		Acks:  wire.AcksStatus{Wire: "v2", UnackedSamples: 10, OldestUnackedAgeSeconds: 1800},
		Bowls: []wire.BowlStatus{{Input: "serial:/dev/ttyAMA0", LastSeen: now.Add(-2 * time.Minute), LastError: "read: EOF"}}}
	var b bytes.Buffer
	if err := WriteText(&b, r, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"DISCONNECTED to", "last error: dial refused", "file system unknown free", "LOWERED",
		"10 samples not acknowledged by the cloud (oldest 30m0s old)", "last ack never", "input serial:/dev/ttyAMA0 DISCONNECTED, last frame 2m0s ago; last error: read: EOF"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteText printed\n%s\nwant %q", b.String(), want)
		}
	}
}

func forwardDown() (s wire.MQTTStatus) {
	s.LastError = "dial refused"
	return s
}
