// Package mqttbroker embeds a mochi-mqtt broker with the settings Bowline
// relies on, so the local dev stack and the edge tests run the same one:
// a single loopback listener (TCP, or TLS with a tls.Config), every client
// allowed, and in-flight limits at the protocol maximum. Clients may
// publish to AWS IoT Basic Ingest topics ($aws/rules/<rule>/...) and
// subscribe to them by name, as `bowline rules` does (mochi refuses client
// publishes only under $SYS; TestBasicIngestTopics).
//
// # Caveats
//
// It is for local use: there is no authentication beyond what the
// tls.Config demands, and all state is in memory and gone after Close.
package mqttbroker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// Config says how to start a Broker.
type Config struct {
	// Addr is the listen address. Default "127.0.0.1:0", a free loopback
	// port; pass a Broker's Addr to start a new one where it was.
	Addr string
	// TLS, when set, makes the listener TLS; set ClientAuth and ClientCAs
	// for mutual TLS.
	TLS *tls.Config
	// Logger receives the broker's own logs. Default: discarded.
	Logger *slog.Logger
	// Hooks are added after the allow-all auth hook, in order; a Recorder,
	// for instance.
	Hooks []mqtt.Hook
}

// setDefaults fills the zero fields with their defaults.
func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate checks the config; it does not change it.
func (c Config) Validate() error {
	for i, h := range c.Hooks {
		if h == nil {
			return fmt.Errorf("mqttbroker: hook %d is nil", i)
		}
	}
	return nil
}

// Broker is a running embedded broker.
type Broker struct {
	srv   *mqtt.Server
	addr  string
	url   string
	close sync.Once
}

// Start starts a broker and returns once it accepts connections.
func Start(cfg Config) (*Broker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	srv := mqtt.New(&mqtt.Options{Logger: cfg.Logger, InlineClient: true, Capabilities: capabilities()})
	hooks := append([]mqtt.Hook{new(auth.AllowHook)}, cfg.Hooks...)
	for _, h := range hooks {
		if err := srv.AddHook(h, nil); err != nil {
			return nil, errors.Join(fmt.Errorf("mqttbroker: add hook %s: %w", h.ID(), err), srv.Close())
		}
	}
	l := listeners.NewTCP(listeners.Config{ID: "bowline", Address: cfg.Addr, TLSConfig: cfg.TLS})
	if err := srv.AddListener(l); err != nil {
		return nil, errors.Join(fmt.Errorf("mqttbroker: listen on %s: %w", cfg.Addr, err), srv.Close())
	}
	if err := srv.Serve(); err != nil {
		return nil, errors.Join(fmt.Errorf("mqttbroker: serve on %s: %w", cfg.Addr, err), srv.Close())
	}
	scheme := "tcp"
	if cfg.TLS != nil {
		scheme = "ssl"
	}
	return &Broker{srv: srv, addr: l.Address(), url: scheme + "://" + l.Address()}, nil
}

// capabilities raises mochi's limits on unacknowledged messages. A
// subscriber that acknowledges late (ingest acks only once data is durable)
// must not make the broker drop QoS 1 messages it already PUBACKed to the
// edge, so each client may hold up to the protocol maximum in flight
// (mochi's default is 8192, which is not safe for that).
func capabilities() *mqtt.Capabilities {
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumInflight = 65535
	caps.MaximumClientWritesPending = 65535
	return caps
}

// Addr is the address the broker listens on, host:port.
func (b *Broker) Addr() string { return b.addr }

// URL is the address as MQTT clients take it: tcp://host:port, or
// ssl://host:port with TLS.
func (b *Broker) URL() string { return b.url }

// Server is the mochi server, for publishing inline or inspecting clients.
func (b *Broker) Server() *mqtt.Server { return b.srv }

// Publish publishes payload on topic from the broker's inline client, as
// AWS IoT's HTTPS Publish does (cloud/iotdata's local endpoint).
func (b *Broker) Publish(topic string, payload []byte, qos byte) error {
	if err := b.srv.Publish(topic, payload, false, qos); err != nil {
		return fmt.Errorf("mqttbroker: publish to %q: %w", topic, err)
	}
	return nil
}

// Close stops the broker; connected clients see the connection drop. It is
// safe to call more than once.
func (b *Broker) Close() error {
	var err error
	b.close.Do(func() { err = b.srv.Close() })
	return err
}
