package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/bowline-iot/bowline/edge/wire"
)

// cloud is the "cloud broker": an embedded mochi broker on 127.0.0.1 that
// can be taken down and brought back on the same port, and records the
// first arrival of every telemetry sample by (thing, sample number).
type cloud struct {
	addr string // host:port
	URL  string // tcp://host:port

	mu       sync.Mutex
	server   *mqtt.Server
	arrived  map[string][]int64 // thing -> sample number -> first arrival, unix ns (0: never)
	distinct int
	samples  int // deliveries, duplicates included
	messages int
	events   int
	bad      int
	connects int
}

func startCloud() (*cloud, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cloud broker: pick a port: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	c := &cloud{addr: addr, URL: "tcp://" + addr, arrived: map[string][]int64{}}
	if err := c.Up(); err != nil {
		return nil, err
	}
	return c, nil
}

// Up starts the broker on its address (again).
func (c *cloud) Up() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.server != nil {
		return nil
	}
	s := mqtt.New(&mqtt.Options{InlineClient: true, Logger: slog.New(slog.DiscardHandler)})
	if err := s.AddHook(new(auth.AllowHook), nil); err != nil {
		return fmt.Errorf("cloud broker: %w", err)
	}
	if err := s.AddHook(&recorder{c: c}, nil); err != nil {
		return fmt.Errorf("cloud broker: %w", err)
	}
	var err error
	for range 50 { // the port may linger briefly after Down
		if err = s.AddListener(listeners.NewTCP(listeners.Config{ID: "cloud", Address: c.addr})); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("cloud broker: listen %s: %w", c.addr, err)
	}
	if err := s.Serve(); err != nil {
		return fmt.Errorf("cloud broker: serve %s: %w", c.addr, err)
	}
	c.server = s
	return nil
}

// Down stops the broker; clients see their connections drop.
func (c *cloud) Down() {
	c.mu.Lock()
	s := c.server
	c.server = nil
	c.mu.Unlock()
	if s != nil {
		_ = s.Close()
	}
}

// Close stops the broker for good.
func (c *cloud) Close() { c.Down() }

// Distinct returns how many distinct samples arrived.
func (c *cloud) Distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.distinct
}

// Connects counts the sessions established so far.
func (c *cloud) Connects() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connects
}

// cloudCounts are the recorder's totals.
type cloudCounts struct {
	Messages int `json:"messages"`
	Samples  int `json:"samples"` // sample deliveries, duplicates included
	Distinct int `json:"distinct"`
	Events   int `json:"events"`
	Bad      int `json:"bad_payloads"`
}

func (c *cloud) Counts() cloudCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cloudCounts{Messages: c.messages, Samples: c.samples, Distinct: c.distinct, Events: c.events, Bad: c.bad}
}

// Arrival returns when sample n of thing first arrived (zero: never).
func (c *cloud) Arrival(thing string, n int32) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.arrived[thing]
	if n < 0 || int(n) >= len(a) || a[n] == 0 {
		return time.Time{}
	}
	return time.Unix(0, a[n])
}

func (c *cloud) record(topic string, payload []byte, at time.Time) {
	switch {
	case strings.HasSuffix(topic, "/events"):
		c.mu.Lock()
		c.events++
		c.mu.Unlock()
		return
	case !strings.HasSuffix(topic, "/telemetry"):
		return
	}
	var m wire.TelemetryMessage
	err := json.Unmarshal(payload, &m)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.bad++
		return
	}
	c.messages++
	a := c.arrived[m.Thing]
	for _, s := range m.Samples {
		n := sampleNumber(s.Value)
		if n < 0 {
			c.bad++
			continue
		}
		c.samples++
		for int(n) >= len(a) {
			a = append(a, make([]int64, max(1024, len(a)))...)
		}
		if a[n] == 0 {
			a[n] = at.UnixNano()
			c.distinct++
		}
	}
	c.arrived[m.Thing] = a
}

// sampleNumber turns a sample value in grams back into the sample's number
// (the bowls send milligrams = sample number).
func sampleNumber(grams float64) int32 {
	mg := grams*1000 + 0.5
	if mg < 0 || mg > 1<<31-1 {
		return -1
	}
	return int32(mg)
}

type recorder struct {
	mqtt.HookBase
	c *cloud
}

func (r *recorder) ID() string { return "bench-edge-recorder" }

func (r *recorder) Provides(b byte) bool {
	return bytes.Contains([]byte{mqtt.OnPublished, mqtt.OnSessionEstablished}, []byte{b})
}

func (r *recorder) OnSessionEstablished(*mqtt.Client, packets.Packet) {
	r.c.mu.Lock()
	r.c.connects++
	r.c.mu.Unlock()
}

func (r *recorder) OnPublished(_ *mqtt.Client, pk packets.Packet) {
	r.c.record(pk.TopicName, pk.Payload, time.Now())
}
