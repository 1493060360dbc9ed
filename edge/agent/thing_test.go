package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/detect"
	"github.com/bowline-iot/bowline/edge/forward"
	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/firmware-bridge/transport"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// A device the things map does not name publishes as "<gateway>:<id>", the
// only names the gateway's IoT policy allows it, when its id passes the
// gateway name rule and that name is no other device's thing; otherwise the
// sink stores nothing and returns ErrDeviceRefused.
func TestSinkRefusesDevicesWithoutASafeThingName(t *testing.T) {
	things := map[string]string{"a1": "kitchen", "a2": "gw-1:hall"}
	tests := []struct {
		dev, thing string // thing "": refused
		why        string
	}{
		{dev: "a1", thing: "kitchen"},
		{dev: "bowl-7", thing: "gw-1:bowl-7"},
		{dev: "kitchen", thing: "gw-1:kitchen"},
		{dev: "bowl 7", why: `must not contain ' '`},
		{dev: "a/b", why: `must not contain '/'`},
		{dev: "-x", why: "must start with a letter or digit"},
		{dev: "", why: "must not be empty"},
		{dev: strings.Repeat("x", 129), why: "more than 128"},
		{dev: "gw-2:kitchen", why: "separates a gateway from its bowls"},
		{dev: "hall", why: `which the things map gives device "a2"`},
		{dev: "gw-1:hall", why: "separates a gateway from its bowls"},
		{dev: strings.Repeat("x", 124), why: "more than 128"},
	}
	for _, tt := range tests {
		m := &memOutbox{}
		s, err := NewSink(m, thingFunc(things, "gw-1"), detect.Config{})
		if err != nil {
			t.Fatal(err)
		}
		var logs syncBuffer
		s.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
		err = s.Deliver(context.Background(), weights(tt.dev, 1, 2))
		if tt.thing != "" {
			if err != nil || len(m.entries) == 0 || m.entries[0].Thing != tt.thing {
				t.Errorf("device %q: Deliver = %v, entries %+v; want stored under thing %q", tt.dev, err, m.entries, tt.thing)
			}
			continue
		}
		if !errors.Is(err, ErrDeviceRefused) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("device %q: Deliver = %v; want ErrDeviceRefused saying %q", tt.dev, err, tt.why)
		}
		if len(m.entries) != 0 || len(m.state) != 0 {
			t.Errorf("device %q: stored %+v, state %v; want nothing", tt.dev, m.entries, m.state)
		}
		if s.Refused() != 1 {
			t.Errorf("device %q: Refused() = %d; want 1", tt.dev, s.Refused())
		}
		if l := logs.String(); !strings.Contains(l, "bowl refused") || !strings.Contains(l, strings.ReplaceAll(tt.why, `"`, `\"`)) {
			t.Errorf("device %q: log %q; want the refusal with the rule", tt.dev, l)
		}
		// A retry of the bridge is refused again, counted, not logged again.
		_ = s.Deliver(context.Background(), weights(tt.dev, 1, 2))
		if n := strings.Count(logs.String(), "bowl refused"); n != 1 || s.Refused() != 2 {
			t.Errorf("device %q: after a retry %d log lines, Refused() = %d; want 1 and 2", tt.dev, n, s.Refused())
		}
	}
}

func TestConfigRefusesThingsThatCollide(t *testing.T) {
	base := Config{Inputs: []Input{{Kind: InputListen, Path: "/x"}}, Forward: forward.Config{ClientID: "gw-1"}}
	tests := []struct {
		things map[string]string
		want   string
	}{
		{map[string]string{"a1": "gw-1:kitchen", "a2": "gw-1:kitchen"}, `things["a2"] "gw-1:kitchen": also the thing of device "a1"`},
		{map[string]string{"a1": "gw-1"}, `things["a1"] "gw-1": is the gateway's own thing name`},
		{map[string]string{"a1": "gw-1:kitchen", "a2": "kitchen"}, `things["a2"] "kitchen": a wire v2 batch carries only the gateway's own things, named gw-1:<bowl>`},
	}
	for _, tt := range tests {
		c := base
		c.Things = tt.things
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(things %v) = %v; want %q", tt.things, err, tt.want)
		}
	}
	// Wire v1 publishes per thing: any name the cloud registered will do.
	c := base
	c.Forward.Wire, c.Things = forward.WireV1, map[string]string{"a1": "kitchen"}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate(v1, things kitchen) = %v; want nil", err)
	}
}

// A bowl whose device id is another bowl's thing name is refused by the
// running agent: nothing reaches the outbox, the MCU keeps its readings
// (no acknowledgement), and the refusal is logged and counted.
func TestAgentRefusesBowlWhoseIDCollides(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "bowls.sock")
	var logs syncBuffer
	a, err := New(Config{
		Outbox:     outbox.Config{Path: filepath.Join(dir, "outbox.db")},
		Forward:    forward.Config{Broker: "tcp://127.0.0.1:1", Tenant: "t1", ClientID: "gw-1", BackoffMin: time.Second, BackoffMax: time.Second, Rule: "bowline_test_telemetry"},
		StatusAddr: "off",
		Inputs:     []Input{{Kind: InputListen, Path: sock}},
		Things:     map[string]string{"a1": "gw-1:kitchen"},
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	var conn interface{ Close() error }
	testkit.WaitFor(t, "the agent listens", hangGuard, func() bool {
		c, err := transport.DialUnix(ctx, sock)
		if err == nil {
			conn = c
			mcu, err := sim.NewMCU(sim.MCUConfig{DeviceID: "kitchen", FirstSeq: 1, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { _ = mcu.Run(ctx, c) })
			if err := mcu.Push(ctx, 1000, frame.WeightBatch{RateHz: 50, Milligrams: []int32{5000}}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if st := mcu.Stats(); st.Freed != 0 {
					t.Errorf("MCU freed %d readings; want none acknowledged", st.Freed)
				}
			})
		}
		return err == nil
	})
	defer conn.Close()
	testkit.WaitFor(t, "the agent refused the bowl", hangGuard, func() bool {
		return strings.Contains(logs.String(), "bowl refused")
	})
	if l := logs.String(); !strings.Contains(l, `device=kitchen`) || !strings.Contains(l, `which the things map gives device \"a1\"`) {
		t.Errorf("log %q; want the device id and the rule", l)
	}
	mfs, err := a.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var refused float64
	for _, mf := range mfs {
		if mf.GetName() == "bowline_edge_sink_refused_total" {
			refused = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if refused < 1 {
		t.Errorf("bowline_edge_sink_refused_total = %v; want at least 1", refused)
	}
	st, err := a.Outbox().Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Telemetry.Records != 0 || st.Events.Records != 0 {
		t.Errorf("outbox holds %d telemetry and %d event records; want none", st.Telemetry.Records, st.Events.Records)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
