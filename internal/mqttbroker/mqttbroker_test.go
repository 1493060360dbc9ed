package mqttbroker_test

import (
	"log/slog"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func start(t *testing.T, cfg mqttbroker.Config) *mqttbroker.Broker {
	t.Helper()
	b, err := mqttbroker.Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func publish(t *testing.T, url, clientID, topic, payload string) {
	t.Helper()
	c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(clientID))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect to %s: %v", url, tok.Error())
	}
	defer c.Disconnect(100)
	if tok := c.Publish(topic, 1, false, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish to %s: %v", url, tok.Error())
	}
}

func TestRecorderSeesPublishesAcrossRestart(t *testing.T) {
	rec := new(mqttbroker.Recorder)
	cfg := mqttbroker.Config{Logger: testkit.Logger(t, slog.LevelWarn), Hooks: []mqtt.Hook{rec}}
	b := start(t, cfg)
	if want := "tcp://" + b.Addr(); b.URL() != want {
		t.Fatalf("URL() = %q; want %q", b.URL(), want)
	}
	publish(t, b.URL(), "gw-1", "dt/a", "one")
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close = %v; want nil", err)
	}

	cfg.Addr = b.Addr()
	again := start(t, cfg)
	if again.Addr() != b.Addr() {
		t.Fatalf("restarted on %s; want %s", again.Addr(), b.Addr())
	}
	publish(t, again.URL(), "gw-2", "dt/b", "two")

	var msgs []mqttbroker.Message
	testkit.WaitFor(t, "both messages", 30*time.Second, func() bool { msgs = rec.Messages(); return len(msgs) == 2 })
	for i, want := range []mqttbroker.Message{{Topic: "dt/a", Payload: []byte("one"), ClientID: "gw-1"}, {Topic: "dt/b", Payload: []byte("two"), ClientID: "gw-2"}} {
		if got := msgs[i]; got.Topic != want.Topic || string(got.Payload) != string(want.Payload) || got.ClientID != want.ClientID {
			t.Errorf("message %d = %s %q from %s; want %s %q from %s", i, got.Topic, got.Payload, got.ClientID, want.Topic, want.Payload, want.ClientID)
		}
	}
	if got := rec.Connects(); len(got) != 2 || got[0] != "gw-1" || got[1] != "gw-2" {
		t.Errorf("Connects() = %v; want [gw-1 gw-2]", got)
	}
}

// TestInflightLimitsAtProtocolMaximum pins the setting the dev stack
// depends on: a late-acking subscriber must not make the broker drop QoS 1
// messages.
func TestInflightLimitsAtProtocolMaximum(t *testing.T) {
	caps := start(t, mqttbroker.Config{}).Server().Options.Capabilities
	if caps.MaximumInflight != 65535 || caps.MaximumClientWritesPending != 65535 {
		t.Errorf("MaximumInflight, MaximumClientWritesPending = %d, %d; want 65535, 65535", caps.MaximumInflight, caps.MaximumClientWritesPending)
	}
}

func TestStartOnBusyAddressFails(t *testing.T) {
	b := start(t, mqttbroker.Config{})
	if other, err := mqttbroker.Start(mqttbroker.Config{Addr: b.Addr()}); err == nil {
		_ = other.Close()
		t.Fatalf("Start on %s (in use) = nil error; want one", b.Addr())
	}
}

// TestBasicIngestTopics: the embedded broker lets a client publish to an
// AWS IoT Basic Ingest topic ($aws/rules/<rule>/...) and delivers it to a
// subscription that names it, which is how `bowline rules` stands in for
// the rules engine (docs/telemetry-path.md, "The rules"). mochi refuses
// client publishes only under $SYS; no option or hook is needed. A '#' or
// '+' first level matches no '$' topic (MQTT 3.1.1 4.7.2), so a catch-all
// subscriber never sees these messages.
func TestBasicIngestTopics(t *testing.T) {
	b := start(t, mqttbroker.Config{Logger: testkit.Logger(t, slog.LevelWarn)})
	topic := "$aws/rules/bowline_dev_telemetry/dt/bowline/t1/gw-1/batch"
	got := make(chan string, 10)
	subscribe := func(id, filter string) {
		c := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID(id))
		if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("connect: %v", tok.Error())
		}
		t.Cleanup(func() { c.Disconnect(100) })
		tok := c.Subscribe(filter, 1, func(_ paho.Client, m paho.Message) { got <- filter + " " + m.Topic() })
		if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("subscribe %s: %v", filter, tok.Error())
		}
		if q := tok.(*paho.SubscribeToken).Result()[filter]; q != 1 {
			t.Fatalf("subscribe %s granted %#x; want QoS 1", filter, q)
		}
	}
	subscribe("rules", "$aws/rules/bowline_dev_telemetry/dt/bowline/+/+/batch")
	subscribe("all", "#")
	subscribe("plus", "+/rules/#")
	publish(t, b.URL(), "gw-1", topic, "x")
	select {
	case m := <-got:
		if want := "$aws/rules/bowline_dev_telemetry/dt/bowline/+/+/batch " + topic; m != want {
			t.Fatalf("delivered %q; want %q", m, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the named subscription got nothing")
	}
	select {
	case m := <-got:
		t.Errorf("also delivered %q; a wildcard first level must not match a $ topic", m)
	case <-time.After(300 * time.Millisecond):
	}
}
