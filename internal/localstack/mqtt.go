package localstack

import (
	"log/slog"

	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/bowline-iot/bowline/internal/mqttbroker"
)

// startBroker starts the embedded MQTT broker on a free loopback port.
func startBroker(log *slog.Logger) (*mqttbroker.Broker, error) {
	return mqttbroker.Start(mqttbroker.Config{Logger: log.With("component", "mqtt-broker")})
}

// Broker returns the embedded MQTT server, for tests that need to inspect
// or publish inline; nil when MQTT was not started.
func (s *Stack) Broker() *mqtt.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mqtt == nil {
		return nil
	}
	return s.mqtt.Server()
}

// MQTTBroker returns the embedded broker itself (it publishes inline:
// the local IoT data plane endpoint's Broker); nil when MQTT was not
// started.
func (s *Stack) MQTTBroker() *mqttbroker.Broker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mqtt
}
