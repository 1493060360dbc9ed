package iotdata_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/iotdata"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func startBroker(t *testing.T, addr string) *mqttbroker.Broker {
	t.Helper()
	b, err := mqttbroker.Start(mqttbroker.Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func subscribe(t *testing.T, url, filter, clientID string) <-chan paho.Message {
	t.Helper()
	got := make(chan paho.Message, 16)
	sub := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(clientID).SetAutoReconnect(false))
	if tok := sub.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect subscriber: %v", tok.Error())
	}
	t.Cleanup(func() { sub.Disconnect(100) })
	if tok := sub.Subscribe(filter, 1, func(_ paho.Client, m paho.Message) { got <- m }); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe %s: %v", filter, tok.Error())
	}
	return got
}

func receive(t *testing.T, got <-chan paho.Message, topic string, payload []byte) {
	t.Helper()
	select {
	case m := <-got:
		if m.Topic() != topic || !bytes.Equal(m.Payload(), payload) {
			t.Errorf("subscriber got %q %q; want %q %q", m.Topic(), m.Payload(), topic, payload)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("subscriber got nothing on %s", topic)
	}
}

// A Publish through the local endpoint backed by an MQTT client reaches a
// subscriber of the broker; while the broker is down the endpoint fails
// at once (503, retried by Publisher), and after the broker is back the
// client has reconnected and publishes again.
func TestMQTTBrokerPublishesAndReconnects(t *testing.T) {
	b := startBroker(t, "")
	addr := b.Addr()
	got := subscribe(t, b.URL(), "cmd/bowline/t1/gw-1/#", "gw-1-a")
	mb, err := iotdata.DialMQTT(t.Context(), iotdata.MQTTConfig{URL: b.URL(), ClientID: "iot-endpoint-test", PublishTimeout: 2 * time.Second, Logger: testkit.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatalf("DialMQTT(%s) = %v; want nil", b.URL(), err)
	}
	t.Cleanup(mb.Close)
	srv := httptest.NewServer(&iotdata.LocalEndpoint{Broker: mb, Credentials: creds, Logger: testkit.Logger(t, slog.LevelError)})
	t.Cleanup(srv.Close)

	payload := []byte(`{"v":1,"outbox":"ob","things":{"gw-1:bowl":[[1,5]]}}`)
	if err := publisher(t, srv.URL).Publish(t.Context(), ackTopic, payload, 1); err != nil {
		t.Fatalf("Publish(%q) = %v; want nil", ackTopic, err)
	}
	receive(t, got, ackTopic, payload)

	_ = b.Close()
	deadline := time.Now().Add(10 * time.Second)
	for mb.Connected() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := mb.Publish(ackTopic, payload, 1); !errors.Is(err, iotdata.ErrBrokerUnavailable) {
		t.Fatalf("Publish with the broker down = %v; want ErrBrokerUnavailable", err)
	}

	b2 := startBroker(t, addr)
	got = subscribe(t, b2.URL(), "cmd/bowline/t1/gw-1/#", "gw-1-b")
	deadline = time.Now().Add(15 * time.Second)
	for !mb.Connected() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	again := []byte(`{"v":1,"outbox":"ob","things":{"gw-1:bowl":[[1,9]]}}`)
	if err := publisher(t, srv.URL).Publish(t.Context(), ackTopic, again, 1); err != nil {
		t.Fatalf("Publish after the broker came back = %v; want nil", err)
	}
	receive(t, got, ackTopic, again)
}
