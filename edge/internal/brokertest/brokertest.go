// Package brokertest runs an embedded mochi MQTT broker on 127.0.0.1 for
// the edge tests and records every message it accepts, so a test can
// compare what the agent sent with what the simulated bowls produced.
package brokertest

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Message is one PUBLISH the broker accepted.
type Message struct {
	Topic    string
	Payload  []byte
	ClientID string
	At       time.Time
}

// Options configure a Broker.
type Options struct {
	// TLS, when set, makes the listener TLS (set ClientAuth and ClientCAs
	// for mutual TLS).
	TLS *tls.Config
	// Addr is the listen address; default a free 127.0.0.1 port.
	Addr string
}

// Broker is an embedded broker with a message recorder.
type Broker struct {
	t    testing.TB
	opts Options
	// Addr is "tcp://127.0.0.1:port" (or "ssl://..." with TLS).
	Addr string
	host string

	mu       sync.Mutex
	server   *mqtt.Server
	msgs     []Message
	changed  chan struct{}
	connects []string
}

// Start starts a broker and stops it at the end of the test.
func Start(t testing.TB, opts Options) *Broker {
	t.Helper()
	if opts.Addr == "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("brokertest: pick a port: %v", err)
		}
		opts.Addr = l.Addr().String()
		l.Close()
	}
	b := &Broker{t: t, opts: opts, host: opts.Addr, changed: make(chan struct{})}
	scheme := "tcp"
	if opts.TLS != nil {
		scheme = "ssl"
	}
	b.Addr = scheme + "://" + opts.Addr
	b.Up()
	t.Cleanup(b.Down)
	return b
}

// Up starts the broker (again) on its address.
func (b *Broker) Up() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.server != nil {
		return
	}
	s := mqtt.New(&mqtt.Options{InlineClient: true, Logger: slog.New(slog.DiscardHandler)})
	if err := s.AddHook(new(auth.AllowHook), nil); err != nil {
		b.t.Fatalf("brokertest: %v", err)
	}
	if err := s.AddHook(&recorder{b: b}, nil); err != nil {
		b.t.Fatalf("brokertest: %v", err)
	}
	if err := s.AddListener(listeners.NewTCP(listeners.Config{ID: "t", Address: b.host, TLSConfig: b.opts.TLS})); err != nil {
		b.t.Fatalf("brokertest: listen %s: %v", b.host, err)
	}
	if err := s.Serve(); err != nil {
		b.t.Fatalf("brokertest: serve: %v", err)
	}
	b.server = s
}

// Down stops the broker; clients see the connection drop.
func (b *Broker) Down() {
	b.mu.Lock()
	s := b.server
	b.server = nil
	b.mu.Unlock()
	if s != nil {
		_ = s.Close()
	}
}

// Messages returns a copy of everything accepted so far.
func (b *Broker) Messages() []Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Message(nil), b.msgs...)
}

// Connects returns the client ids that connected, in order.
func (b *Broker) Connects() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.connects...)
}

// WaitFor waits until cond holds for the messages so far; timeout is a hang
// guard only and fails the test.
func (b *Broker) WaitFor(t testing.TB, timeout time.Duration, what string, cond func([]Message) bool) []Message {
	t.Helper()
	deadline := time.After(timeout)
	for {
		b.mu.Lock()
		ch := b.changed
		msgs := append([]Message(nil), b.msgs...)
		b.mu.Unlock()
		if cond(msgs) {
			return msgs
		}
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatalf("brokertest: waited %s for %s; have %d messages", timeout, what, len(msgs))
		}
	}
}

type recorder struct {
	mqtt.HookBase
	b *Broker
}

func (r *recorder) ID() string { return "brokertest-recorder" }

func (r *recorder) Provides(x byte) bool {
	return bytes.Contains([]byte{mqtt.OnPublished, mqtt.OnSessionEstablished}, []byte{x})
}

func (r *recorder) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	r.b.mu.Lock()
	r.b.connects = append(r.b.connects, cl.ID)
	r.b.mu.Unlock()
}

func (r *recorder) OnPublished(cl *mqtt.Client, pk packets.Packet) {
	m := Message{Topic: pk.TopicName, Payload: append([]byte(nil), pk.Payload...), ClientID: cl.ID, At: time.Now()}
	r.b.mu.Lock()
	r.b.msgs = append(r.b.msgs, m)
	close(r.b.changed)
	r.b.changed = make(chan struct{})
	r.b.mu.Unlock()
}

// String names the broker in failure messages.
func (b *Broker) String() string { return fmt.Sprintf("broker %s", b.Addr) }
