package iotdata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// connectTimeout bounds one CONNECT attempt (dial and CONNACK).
const connectTimeout = 5 * time.Second

// MQTTConfig says how MQTTBroker reaches its broker.
type MQTTConfig struct {
	// URL is the broker, tcp://host:port. Required.
	URL string
	// ClientID is the MQTT client id; default "bowline-iot-endpoint". The
	// session is clean: the client only publishes.
	ClientID string
	// PublishTimeout bounds one Publish (until the PUBACK for QoS 1);
	// default 10s.
	PublishTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// setDefaults fills the zero fields with their defaults.
func (c *MQTTConfig) setDefaults() {
	if c.ClientID == "" {
		c.ClientID = "bowline-iot-endpoint"
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate checks the config; it does not change it.
func (c MQTTConfig) Validate() error {
	if c.URL == "" {
		return errors.New("iotdata: MQTTConfig.URL is empty")
	}
	if c.PublishTimeout < 0 {
		return fmt.Errorf("iotdata: MQTTConfig.PublishTimeout %v: want 0 (default) or more", c.PublishTimeout)
	}
	return nil
}

// MQTTBroker is a Broker that publishes through an MQTT client connection
// (paho), for a LocalEndpoint in front of a broker in another process
// (Mosquitto in a chaos run: `bowline iot-endpoint`). It reconnects on its
// own; while it is not connected Publish fails at once with
// ErrBrokerUnavailable, which LocalEndpoint answers 503 and Publisher
// retries.
type MQTTBroker struct {
	cfg    MQTTConfig
	client mqtt.Client
}

var _ Broker = (*MQTTBroker)(nil)

// DialMQTT connects to cfg.URL and returns once the first connection is
// up, or with ctx's error.
func DialMQTT(ctx context.Context, cfg MQTTConfig) (*MQTTBroker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	up := make(chan struct{}, 1)
	o := mqtt.NewClientOptions().
		AddBroker(cfg.URL).
		SetClientID(cfg.ClientID).
		SetCleanSession(true).
		SetAutoReconnect(true).
		SetConnectRetry(true).
		SetConnectRetryInterval(time.Second).
		SetMaxReconnectInterval(2 * time.Second).
		// A broker that accepts TCP but never answers CONNECT (one that is
		// shutting down, or the kernel's backlog of a stopped one) must
		// not hold a reconnect for paho's default 30s.
		SetConnectTimeout(connectTimeout).
		SetKeepAlive(30 * time.Second).
		SetOnConnectHandler(func(mqtt.Client) {
			log.Info("mqtt connected", "broker", cfg.URL, "client_id", cfg.ClientID)
			select {
			case up <- struct{}{}:
			default:
			}
		}).
		SetConnectionLostHandler(func(_ mqtt.Client, err error) {
			log.Warn("mqtt connection lost; reconnecting", "broker", cfg.URL, "err", err)
		})
	c := mqtt.NewClient(o)
	c.Connect()
	select {
	case <-up:
		return &MQTTBroker{cfg: cfg, client: c}, nil
	case <-ctx.Done():
		c.Disconnect(0)
		return nil, fmt.Errorf("iotdata: connect to %s: %w", cfg.URL, ctx.Err())
	}
}

// Publish publishes payload on topic and, for QoS 1, waits for the
// broker's PUBACK. It is safe for concurrent use.
func (b *MQTTBroker) Publish(topic string, payload []byte, qos byte) error {
	if !b.client.IsConnectionOpen() {
		return fmt.Errorf("publish to %q: %w", topic, ErrBrokerUnavailable)
	}
	tok := b.client.Publish(topic, qos, false, payload)
	if !tok.WaitTimeout(b.cfg.PublishTimeout) {
		return fmt.Errorf("publish to %q: no answer in %v: %w", topic, b.cfg.PublishTimeout, ErrBrokerUnavailable)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("publish to %q: %w: %w", topic, ErrBrokerUnavailable, err)
	}
	return nil
}

// Connected reports whether the client is connected now.
func (b *MQTTBroker) Connected() bool { return b.client.IsConnectionOpen() }

// Close disconnects, giving publishes in flight up to 250ms.
func (b *MQTTBroker) Close() { b.client.Disconnect(250) }
