package forward

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func testLogger(t testing.TB) *slog.Logger { return testkit.Logger(t, slog.LevelInfo) }

// testBroker is the embedded broker with a Recorder, able to go down and
// come back on the same address, as a gateway sees an outage.
type testBroker struct {
	t   testing.TB
	cfg mqttbroker.Config
	rec *mqttbroker.Recorder
	srv *mqttbroker.Broker // nil while down
	// URL is what the forwarder dials: tcp://127.0.0.1:port (ssl:// with TLS).
	URL string
}

// startBroker starts a broker (TLS when tlsCfg is set) and stops it at the
// end of the test.
func startBroker(t testing.TB, tlsCfg *tls.Config) *testBroker {
	t.Helper()
	b := &testBroker{t: t, rec: new(mqttbroker.Recorder)}
	b.cfg = mqttbroker.Config{TLS: tlsCfg, Hooks: []mqtt.Hook{b.rec}}
	b.up()
	b.cfg.Addr, b.URL = b.srv.Addr(), b.srv.URL()
	t.Cleanup(b.down)
	return b
}

// up starts the broker again on its address.
func (b *testBroker) up() {
	b.t.Helper()
	if b.srv != nil {
		return
	}
	srv, err := mqttbroker.Start(b.cfg)
	if err != nil {
		b.t.Fatalf("start broker: %v", err)
	}
	b.srv = srv
}

// down stops the broker; clients see the connection drop.
func (b *testBroker) down() {
	if b.srv != nil {
		_ = b.srv.Close()
		b.srv = nil
	}
}

// waitFor waits until cond holds for the messages accepted so far, and
// returns them; timeout is a hang guard only.
func (b *testBroker) waitFor(t testing.TB, timeout time.Duration, what string, cond func([]mqttbroker.Message) bool) []mqttbroker.Message {
	t.Helper()
	var msgs []mqttbroker.Message
	testkit.WaitFor(t, what, timeout, func() bool { msgs = b.rec.Messages(); return cond(msgs) })
	return msgs
}

func openOutbox(t testing.TB) *outbox.Outbox {
	t.Helper()
	o, err := outbox.Open(outbox.Config{Path: filepath.Join(t.TempDir(), "outbox.db"), Logger: testLogger(t), TelemetryTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// testRule is the telemetry rule of the tests' wire v2 gateways.
const testRule = "bowline_test_telemetry"

var t0 = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

func telemetry(thing string, n int, every time.Duration) []outbox.Entry {
	out := make([]outbox.Entry, n)
	for i := range out {
		out[i] = outbox.Entry{Lane: outbox.Telemetry, Thing: thing, At: t0.Add(time.Duration(i) * every), Type: "weight_g", Value: 400 + float64(i%10)/2}
	}
	return out
}

func event(thing, id string) outbox.Entry {
	return outbox.Entry{Lane: outbox.Events, Thing: thing, At: t0, Type: "bowl.refilled", ID: id, Data: []byte(`{"grams_added":120,"level_g":400}`)}
}

func runForwarder(t *testing.T, cfg Config, src Source) (*Forwarder, context.CancelFunc) {
	t.Helper()
	return runForwarderWithObserver(t, cfg, src, NopObserver{})
}

func runForwarderWithObserver(t *testing.T, cfg Config, src Source, obs Observer) (*Forwarder, context.CancelFunc) {
	t.Helper()
	cfg.Observer = obs
	if cfg.Tenant == "" {
		cfg.Tenant = "t1"
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "gw-1"
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	if cfg.Wire != WireV1 && cfg.Rule == "" {
		cfg.Rule = testRule
	}
	f, err := New(cfg, src)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v; want context.Canceled", err)
		}
	})
	return f, cancel
}

func dataMessages(msgs []mqttbroker.Message) []mqttbroker.Message {
	var out []mqttbroker.Message
	for _, m := range msgs {
		if !strings.HasSuffix(m.Topic, "/status") {
			out = append(out, m)
		}
	}
	return out
}

func countSamples(t testing.TB, msgs []mqttbroker.Message) int {
	n := 0
	for _, m := range msgs {
		if strings.HasSuffix(m.Topic, "/telemetry") {
			var tm wire.TelemetryMessage
			if err := json.Unmarshal(m.Payload, &tm); err != nil {
				t.Fatalf("telemetry payload %s: %v", m.Payload, err)
			}
			n += len(tm.Samples)
		}
	}
	return n
}

func TestPayloadsAreExactlyAsDesigned(t *testing.T) {
	ctx := context.Background()
	o := openOutbox(t)
	if err := o.Append(ctx, []outbox.Entry{
		{Lane: outbox.Telemetry, Thing: "bowl-1", At: t0.Add(123456789), Type: "weight_g", Value: 412.5},
		{Lane: outbox.Telemetry, Thing: "bowl-1", At: t0.Add(time.Second), Type: "weight_g", Value: 410},
		{Lane: outbox.Events, Thing: "bowl-1", At: t0, Type: "bowl.meal_finished", ID: "meal-17", Data: []byte(`{"grams_eaten":42.5}`)},
	}, nil); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, nil)
	sentAt := time.Date(2026, 11, 1, 8, 0, 5, 0, time.FixedZone("gateway", 3600))
	runForwarder(t, Config{Broker: b.URL, Wire: WireV1, Now: func() time.Time { return sentAt }}, o)
	msgs := dataMessages(b.waitFor(t, 30*time.Second, "2 messages", func(m []mqttbroker.Message) bool { return len(dataMessages(m)) >= 2 }))
	want := []struct{ topic, payload string }{
		{"dt/bowline/t1/bowl-1/events", `{"v":1,"thing":"bowl-1","seq":1,"id":"meal-17","type":"bowl.meal_finished","at":"2026-11-01T08:00:00Z","data":{"grams_eaten":42.5},"sent_at":"2026-11-01T07:00:05Z"}`},
		{"dt/bowline/t1/bowl-1/telemetry", `{"v":1,"thing":"bowl-1","seq":1,"samples":[{"t":"2026-11-01T08:00:00.123456789Z","kind":"weight_g","value":412.5},{"t":"2026-11-01T08:00:01Z","kind":"weight_g","value":410}],"sent_at":"2026-11-01T07:00:05Z"}`},
	}
	for i, w := range want {
		if msgs[i].Topic != w.topic || string(msgs[i].Payload) != w.payload {
			t.Errorf("message %d = %s %s; want %s %s", i, msgs[i].Topic, msgs[i].Payload, w.topic, w.payload)
		}
	}
	st, _ := o.Stats()
	testkit.WaitFor(t, "acks", 30*time.Second, func() bool { st, _ = o.Stats(); return st.Events.Records+st.Telemetry.Records == 0 })
}

// TestOutageBacklogDrainsInOrder keeps the broker down while an hour of
// readings (1 Hz, two bowls) and some events pile up, then brings it up:
// events arrive before any telemetry, telemetry in seq order per thing,
// nothing is missing, and the publish rate stays within the limit.
func TestOutageBacklogDrainsInOrder(t *testing.T) {
	ctx := context.Background()
	o := openOutbox(t)
	b := startBroker(t, nil)
	b.down()
	const rateLimit = 50.0
	f, _ := runForwarder(t, Config{Broker: b.URL, Wire: WireV1, Rate: rateLimit, MaxBatchSamples: 100, BackoffMin: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond}, o)
	things := []string{"bowl-1", "bowl-2"}
	for _, th := range things {
		if err := o.Append(ctx, telemetry(th, 3600, time.Second), nil); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if err := o.Append(ctx, []outbox.Entry{event(th, fmt.Sprint("refill-", i))}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s := f.Status(); s.Connected {
		t.Fatalf("connected while the broker is down")
	}
	up := time.Now()
	b.up()
	msgs := dataMessages(b.waitFor(t, 60*time.Second, "the backlog", func(m []mqttbroker.Message) bool { return countSamples(t, dataMessages(m)) >= 7200 }))
	elapsed := time.Since(up)
	seenTelemetry := false
	last := map[string]uint64{}
	events := 0
	for _, m := range msgs {
		switch {
		case strings.HasSuffix(m.Topic, "/events"):
			if seenTelemetry {
				t.Fatalf("event %s after telemetry; want all events first", m.Payload)
			}
			events++
		case strings.HasSuffix(m.Topic, "/telemetry"):
			seenTelemetry = true
			var tm wire.TelemetryMessage
			_ = json.Unmarshal(m.Payload, &tm)
			if tm.Seq <= last[tm.Thing] {
				t.Fatalf("telemetry %s seq %d after %d; want increasing", tm.Thing, tm.Seq, last[tm.Thing])
			}
			last[tm.Thing] = tm.Seq
		}
	}
	if events != 10 {
		t.Fatalf("events = %d; want 10", events)
	}
	if got := countSamples(t, msgs); got != 7200 {
		t.Fatalf("samples = %d; want 7200", got)
	}
	// The limiter lets a burst of rate/10 through, then rate per second: a
	// lower bound on the time, which cannot flake.
	minElapsed := time.Duration(float64(len(msgs)-int(rateLimit/10)) / rateLimit * float64(time.Second))
	if elapsed < minElapsed {
		t.Fatalf("%d messages in %s; want at least %s at %g/s", len(msgs), elapsed, minElapsed, rateLimit)
	}
}

func TestTelemetryBatchesRespectMaxPayload(t *testing.T) {
	ctx := context.Background()
	o := openOutbox(t)
	if err := o.Append(ctx, telemetry("bowl-1", 500, 20*time.Millisecond), nil); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, nil)
	runForwarder(t, Config{Broker: b.URL, Wire: WireV1, MaxPayload: 2048, Rate: 1000}, o)
	msgs := dataMessages(b.waitFor(t, 30*time.Second, "500 samples", func(m []mqttbroker.Message) bool { return countSamples(t, dataMessages(m)) >= 500 }))
	for _, m := range msgs {
		if len(m.Payload) > 2048 {
			t.Fatalf("payload of %d bytes; want at most 2048", len(m.Payload))
		}
	}
	if len(msgs) < 500/30 {
		t.Fatalf("%d messages for 500 samples; want batches split by size", len(msgs))
	}
}

func TestConfigValidateNamesField(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "broker"},
		{Config{Broker: "http://x:1", Tenant: "t", ClientID: "c"}, "scheme"},
		{Config{Broker: "tcp://x:1", Tenant: "a/b", ClientID: "c"}, "tenant"},
		{Config{Broker: "tcp://x:1", Tenant: "t", ClientID: ""}, "client_id"},
		{Config{Broker: "tcp://x:1", Tenant: "t", ClientID: "c", MaxPayload: 10}, "max_payload"},
		{Config{Broker: "tcp://x:1", Tenant: "t", ClientID: "c"}, "telemetry rule: must be set"},
		{Config{Broker: "tcp://x:1", Tenant: "t", ClientID: "c", Rule: "bowline-dev"}, `telemetry rule "bowline-dev"`},
		{Config{Broker: "tcp://x:1", Tenant: "t", ClientID: "c", Wire: "v3"}, `telemetry wire "v3"`},
		{Config{Broker: "tcp://x:1", Tenant: "t", ClientID: "c", Rule: testRule, AckTimeout: time.Minute, BatchInterval: 2 * time.Minute}, "ack_timeout 1m0s: must be longer than batch_interval"},
		{Config{Broker: "tcp://x:1", Tenant: "t", ClientID: "c", Rule: testRule, BatchInterval: -1}, "batch_interval"},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v; want an error naming %s", tt.cfg, err, tt.want)
		}
	}
}
