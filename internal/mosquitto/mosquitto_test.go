package mosquitto_test

import (
	"fmt"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/internal/mosquitto"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func start(t *testing.T) *mosquitto.Broker {
	t.Helper()
	testkit.Need(t, mosquitto.Available())
	b, err := mosquitto.Start(t.Context(), mosquitto.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func connect(t *testing.T, url, id string, clean bool, onMsg paho.MessageHandler) paho.Client {
	t.Helper()
	o := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetCleanSession(clean).
		SetAutoReconnect(false).SetDefaultPublishHandler(onMsg)
	c := paho.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s: %v", id, tok.Error())
	}
	return c
}

// A persistent session's queued QoS 1 messages survive a graceful broker
// restart: the property the ingest and power-cut tests build on.
func TestPersistentSessionSurvivesRestart(t *testing.T) {
	b := start(t)
	got := make(chan string, 100)
	sub := connect(t, b.URL(), "sub", false, func(_ paho.Client, m paho.Message) { got <- string(m.Payload()) })
	if tok := sub.Subscribe("t/#", 1, nil); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	sub.Disconnect(100)

	pub := connect(t, b.URL(), "pub", true, nil)
	for i := range 10 {
		if tok := pub.Publish("t/x", 1, false, fmt.Sprint(i)); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatal(tok.Error())
		}
	}
	pub.Disconnect(100)

	b.Stop()
	if err := b.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	sub = connect(t, b.URL(), "sub", false, func(_ paho.Client, m paho.Message) { got <- string(m.Payload()) })
	defer sub.Disconnect(100)
	seen := map[string]bool{}
	deadline := time.After(20 * time.Second)
	for len(seen) < 10 {
		select {
		case p := <-got:
			seen[p] = true
		case <-deadline:
			t.Fatalf("got %d of 10 queued messages after restart: %v", len(seen), seen)
		}
	}
}
