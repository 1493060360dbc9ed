package localstack

import (
	"fmt"
	"log/slog"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// broker is the embedded mochi MQTT broker.
type broker struct {
	srv  *mqtt.Server
	addr string
}

func startBroker(log *slog.Logger) (*broker, error) {
	caps := mqtt.NewDefaultServerCapabilities()
	// A subscriber that acknowledges late (ingest acks only once data is
	// durable) must not make the broker drop QoS 1 messages it already
	// PUBACKed to the edge: hold up to the protocol maximum per client
	// (mochi's default is 8192).
	caps.MaximumInflight = 65535
	caps.MaximumClientWritesPending = 65535
	srv := mqtt.New(&mqtt.Options{Logger: log.With("component", "mqtt-broker"), InlineClient: true, Capabilities: caps})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		return nil, fmt.Errorf("mqtt broker: %w", err)
	}
	tcp := listeners.NewTCP(listeners.Config{ID: "bowline-local", Address: "127.0.0.1:0"})
	if err := srv.AddListener(tcp); err != nil {
		return nil, fmt.Errorf("mqtt broker listen: %w", err)
	}
	if err := srv.Serve(); err != nil {
		return nil, fmt.Errorf("mqtt broker serve: %w", err)
	}
	return &broker{srv: srv, addr: tcp.Address()}, nil
}

func (b *broker) close() error { return b.srv.Close() }

// Broker returns the embedded MQTT server, for tests that need to inspect
// or publish inline; nil when MQTT was not started.
func (s *Stack) Broker() *mqtt.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mqtt == nil {
		return nil
	}
	return s.mqtt.srv
}
