package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/iotdata"
	"github.com/bowline-iot/bowline/internal/cli"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
)

// `bowline iot-endpoint --help` documents the command; a missing broker,
// an address off loopback or an extra argument are usage errors.
func TestIoTEndpointFlags(t *testing.T) {
	t.Setenv("BOWLINE_MQTT_URL", "")
	var out bytes.Buffer
	if err := iotEndpointCmd(t.Context(), []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("iot-endpoint --help = %v; want flag.ErrHelp", err)
	}
	for _, args := range [][]string{
		{},
		{"--broker", "tcp://127.0.0.1:1883", "--addr", "0.0.0.0:0"},
		{"--broker", "tcp://127.0.0.1:1883", "--addr", ":8080"},
		{"--broker", "tcp://127.0.0.1:1883", "extra"},
	} {
		if err := iotEndpointCmd(t.Context(), args, &out); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("iot-endpoint %s = %v; want a usage error", strings.Join(args, " "), err)
		}
	}
}

// TestIoTEndpointAsProcess runs `bowline iot-endpoint` as a process: a
// Publish signed for iotdata reaches a subscriber of the broker, and
// SIGTERM stops the command cleanly.
func TestIoTEndpointAsProcess(t *testing.T) {
	b, err := mqttbroker.Start(mqttbroker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	const topic = "cmd/bowline/t1/gw-1/ack"
	got := make(chan paho.Message, 1)
	sub := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("gw-1").SetAutoReconnect(false))
	if tok := sub.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	t.Cleanup(func() { sub.Disconnect(100) })
	if tok := sub.Subscribe(topic, 1, func(_ paho.Client, m paho.Message) { got <- m }); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}

	p := startProc(t, bowlineBin(t), os.Environ(), "iot-endpoint", "--broker", b.URL(), "--print-addr")
	url := p.waitLine(t, "http://")
	pub := &iotdata.Publisher{Endpoint: url, Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	payload := []byte(`{"v":1,"outbox":"ob","things":{"gw-1:bowl":[[1,5]]}}`)
	if err := pub.Publish(t.Context(), topic, payload, 1); err != nil {
		t.Fatalf("Publish(%q) through %s = %v; want nil", topic, url, err)
	}
	select {
	case m := <-got:
		if !bytes.Equal(m.Payload(), payload) {
			t.Errorf("subscriber got %q; want %q", m.Payload(), payload)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("subscriber got nothing")
	}
	p.waitLine(t, `msg="iot publish"`)
	p.stop(t)
}
