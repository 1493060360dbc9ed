package mqttbroker_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want int64
	}{{0, 1}, {1, 1}, {5120, 1}, {5121, 2}, {8 * 1024, 2}, {128 * 1024, 26}} {
		if got := mqttbroker.Units(tc.n); got != tc.want {
			t.Errorf("Units(%d) = %d; want %d", tc.n, got, tc.want)
		}
	}
}

func connect(t *testing.T, url, id string) paho.Client {
	t.Helper()
	c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(id).SetAutoReconnect(false))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s to %s: %v", id, url, tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

func wait(t *testing.T, tok paho.Token, what string) {
	t.Helper()
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("%s: %v", what, tok.Error())
	}
}

// TestMeterCountsWhatAWSBills drives the billed cases through a real
// broker: a Basic Ingest batch (no message, two rule units for 6 KB), an
// acknowledgement delivered at QoS 1 (one publish in from the publisher,
// one out, one PUBACK received from the gateway: all metered, in the ack
// class), and the free PUBACKs the broker sends. The stand-in publisher is
// skipped, as a local stand-in for an AWS service is.
func TestMeterCountsWhatAWSBills(t *testing.T) {
	meter := &mqttbroker.Meter{
		Class: func(topic string) string {
			if strings.HasSuffix(topic, "/ack") {
				return "ack"
			}
			return ""
		},
		Skip:  func(id string) bool { return id == "stand-in" },
		HTTPS: func(id string) bool { return id == "acker" },
	}
	b := start(t, mqttbroker.Config{Logger: testkit.Logger(t, slog.LevelWarn), Hooks: []mqtt.Hook{meter}})

	gw := connect(t, b.URL(), "gw-1")
	got := make(chan struct{}, 1)
	wait(t, gw.Subscribe("cmd/bowline/t/gw-1/ack", 1, func(paho.Client, paho.Message) { got <- struct{}{} }), "subscribe")
	batch := bytes.Repeat([]byte{0x02}, 6*1024)
	wait(t, gw.Publish("$aws/rules/bowline_x_telemetry/dt/bowline/t/gw-1/batch", 1, false, batch), "publish batch")

	acker := connect(t, b.URL(), "acker")
	wait(t, acker.Publish("cmd/bowline/t/gw-1/ack", 1, false, `{"v":1}`), "publish ack")
	standIn := connect(t, b.URL(), "stand-in")
	wait(t, standIn.Publish("dt/bowline/t/gw-1/other", 1, false, "x"), "stand-in publish")
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("ack not delivered")
	}

	var m mqttbroker.Metered
	testkit.WaitFor(t, "the gateway's PUBACK", 10*time.Second, func() bool {
		m = meter.Counts()
		return m.Classes["ack"].PubAcksIn == 1
	})
	if bi := m.BasicIngest; bi.PublishesIn != 1 || bi.Units != 2 || bi.Messages != 0 {
		t.Errorf("basic ingest = %+v; want 1 publish, 2 rule units, 0 metered messages", bi)
	}
	ack := m.Classes["ack"]
	if ack.PublishesIn != 1 || ack.PublishesOut != 1 || ack.PubAcksIn != 1 || ack.Messages != 3 || ack.Units != 3 {
		t.Errorf("ack traffic = %+v; want 1 in, 1 out, 1 PUBACK received: 3 messages, 3 units", ack)
	}
	other := m.Classes[""]
	// gw-1: 1 CONNECT, 1 SUBSCRIBE metered (the HTTPS stand-in's connection
	// is not); 2 PUBACKs sent (batch, ack) free.
	if other.Connects != 1 || other.Subscribes != 1 || other.Messages != 2 || other.PubAcksOut != 2 || other.PublishesIn != 0 {
		t.Errorf("other traffic = %+v; want 1 connect and 1 subscribe metered (2 messages), 2 free PUBACKs sent, no publishes", other)
	}
	if m.Sessions != 1 || m.MaxConnections != 1 || m.Reconnects != 0 || m.HTTPSPublishes != 1 {
		t.Errorf("sessions, max connections, reconnects, HTTPS publishes = %d, %d, %d, %d; want 1, 1, 0, 1", m.Sessions, m.MaxConnections, m.Reconnects, m.HTTPSPublishes)
	}
	// gw-1: the batch in, the ack out.
	if m.MaxClientSubscriptions != 1 || m.MaxClientPublishes != 2 || m.MaxPublishBytes != int64(len(batch)) {
		t.Errorf("busiest client subscriptions, publishes, largest publish = %d, %d, %d; want 1, 2, %d", m.MaxClientSubscriptions, m.MaxClientPublishes, m.MaxPublishBytes, len(batch))
	}
	if m.ConnectionSeconds <= 0 {
		t.Errorf("connection seconds = %g; want > 0", m.ConnectionSeconds)
	}
}

func TestMeteredSince(t *testing.T) {
	before := mqttbroker.Metered{Classes: map[string]mqttbroker.Traffic{"": {Connects: 3, Messages: 5, Units: 5}},
		BasicIngest: mqttbroker.Traffic{PublishesIn: 2}, ConnectionSeconds: 10, Sessions: 3, MaxConnections: 3}
	after := mqttbroker.Metered{Classes: map[string]mqttbroker.Traffic{"": {Connects: 4, Messages: 9, Units: 10}, "ack": {PublishesOut: 2}},
		BasicIngest: mqttbroker.Traffic{PublishesIn: 12}, ConnectionSeconds: 70, Sessions: 4, Reconnects: 1, MaxConnections: 3}
	d := after.Since(before)
	if c := d.Classes[""]; c.Connects != 1 || c.Messages != 4 || c.Units != 5 {
		t.Errorf("class \"\" since = %+v; want 1 connect, 4 messages, 5 units", c)
	}
	if d.Classes["ack"].PublishesOut != 2 || d.BasicIngest.PublishesIn != 10 || d.ConnectionSeconds != 60 || d.Sessions != 1 || d.Reconnects != 1 || d.MaxConnections != 3 {
		t.Errorf("since = %+v; want 2 acks out, 10 basic ingest, 60 s, 1 session, 1 reconnect, max connections kept", d)
	}
}

// A client may PUBACK a publish before the broker's OnPacketSent for it
// runs (the write returned, the hook not yet called); the PUBACK is still
// billed in the publish's class. Driven through the hooks in that order.
func TestMeterBillsAnEarlyPubAckInThePublishsClass(t *testing.T) {
	meter := &mqttbroker.Meter{Class: func(topic string) string {
		if strings.HasSuffix(topic, "/ack") {
			return "ack"
		}
		return ""
	}}
	cl := &mqtt.Client{ID: "gw-1"}
	pub := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, TopicName: "cmd/bowline/t/gw-1/ack", PacketID: 7}
	pub = meter.OnPacketEncode(cl, pub)
	if _, err := meter.OnPacketRead(cl, packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: 7}); err != nil {
		t.Fatal(err)
	}
	meter.OnPacketSent(cl, pub, nil)
	m := meter.Counts()
	if ack := m.Classes["ack"]; ack.PubAcksIn != 1 || ack.PublishesOut != 1 {
		t.Errorf("ack class = %+v; want the publish out and its PUBACK in", ack)
	}
	if other := m.Classes[""]; other.PubAcksIn != 0 {
		t.Errorf("class \"\" PUBACKs in = %d; want 0", other.PubAcksIn)
	}
}
