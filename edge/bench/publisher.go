package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/edge/wire"
)

// pubSource is mosquitto's input: one QoS 1 publisher per bowl into the
// local mosquitto, with a window of unacknowledged publishes. A frame
// counts as acknowledged when mosquitto PUBACKs it, the guarantee a
// mosquitto bridge gives its local publishers. A publish that fails or
// times out (mosquitto killed) is sent again on a new connection, as the
// firmware resends its ring.
type pubSource struct {
	broker string
	tenant string
	window int
	logs   []*bowlLog
	bowls  []*pubBowl
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type pubBowl struct {
	mu       sync.Mutex
	wake     chan struct{} // closed when queue, inflight or conn change
	queue    []int         // frame numbers waiting to be (re)published
	inflight int
	unacked  int // pushed and not yet acked
	conn     paho.Client
	gen      int // connection generation; a failure on an old one is ignored
}

func newPubSource(broker, tenant string, bowls, window int) *pubSource {
	ctx, cancel := context.WithCancel(context.Background())
	s := &pubSource{broker: broker, tenant: tenant, window: window, logs: newBowlLogs(bowls), ctx: ctx, cancel: cancel}
	for i := range bowls {
		pb := &pubBowl{wake: make(chan struct{})}
		s.bowls = append(s.bowls, pb)
		s.wg.Go(func() { s.run(i, pb) })
	}
	return s
}

func (pb *pubBowl) signal() { // pb.mu held
	close(pb.wake)
	pb.wake = make(chan struct{})
}

func (s *pubSource) Push(ctx context.Context, b int, mg []int32) error {
	i := s.logs[b].add(mg, time.Now())
	pb := s.bowls[b]
	pb.mu.Lock()
	pb.queue = append(pb.queue, i)
	pb.unacked++
	pb.signal()
	pb.mu.Unlock()
	return nil
}

func (s *pubSource) Pending() int {
	n := 0
	for _, pb := range s.bowls {
		pb.mu.Lock()
		n += pb.unacked
		pb.mu.Unlock()
	}
	return n
}

func (s *pubSource) Logs() []*bowlLog { return s.logs }

func (s *pubSource) Close() {
	s.cancel()
	s.wg.Wait()
	for _, pb := range s.bowls {
		if pb.conn != nil {
			pb.conn.Disconnect(0)
		}
	}
}

// run publishes bowl b's queue within the window, reconnecting as needed.
func (s *pubSource) run(b int, pb *pubBowl) {
	topic := wire.Topic{Tenant: s.tenant, Thing: s.logs[b].Thing, Kind: wire.KindTelemetry}.String()
	for {
		pb.mu.Lock()
		for s.ctx.Err() == nil && (len(pb.queue) == 0 || pb.inflight >= s.window) {
			w := pb.wake
			pb.mu.Unlock()
			select {
			case <-w:
			case <-s.ctx.Done():
			}
			pb.mu.Lock()
		}
		if s.ctx.Err() != nil {
			pb.mu.Unlock()
			return
		}
		conn, gen := pb.conn, pb.gen
		pb.mu.Unlock()
		if conn == nil {
			c, err := s.connect(b)
			if err != nil {
				select {
				case <-time.After(50 * time.Millisecond):
				case <-s.ctx.Done():
				}
				continue
			}
			pb.mu.Lock()
			pb.conn, pb.gen = c, pb.gen+1
			pb.mu.Unlock()
			continue
		}
		pb.mu.Lock()
		i := pb.queue[0]
		pb.queue = pb.queue[1:]
		pb.inflight++
		pb.mu.Unlock()
		payload := s.payload(b, i)
		tok := conn.Publish(topic, 1, false, payload)
		s.wg.Go(func() {
			ok := tok.WaitTimeout(3*time.Second) && tok.Error() == nil
			pb.mu.Lock()
			defer pb.mu.Unlock()
			pb.inflight--
			if ok {
				s.logs[b].setAcked(i)
				pb.unacked--
			} else {
				pb.queue = append([]int{i}, pb.queue...)
				if pb.gen == gen && pb.conn != nil {
					go pb.conn.Disconnect(0)
					pb.conn = nil
				}
			}
			pb.signal()
		})
	}
}

func (s *pubSource) connect(b int) (paho.Client, error) {
	o := paho.NewClientOptions().AddBroker(s.broker).
		SetClientID(fmt.Sprintf("pub-%s", s.logs[b].Thing)).
		SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false).
		SetConnectTimeout(2 * time.Second).SetKeepAlive(30 * time.Second).
		SetOrderMatters(false)
	c := paho.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(3*time.Second) || tok.Error() != nil {
		c.Disconnect(0)
		return nil, fmt.Errorf("connect %s: %v", s.broker, tok.Error())
	}
	return c, nil
}

// payload is frame i of bowl b as a telemetry message (docs/contract.md,
// "MQTT topics and payloads"), one sample every 20 ms (50 Hz) from the
// hand-over time.
func (s *pubSource) payload(b, i int) []byte {
	l := s.logs[b]
	l.mu.Lock()
	f := l.frames[i]
	l.mu.Unlock()
	m := wire.TelemetryMessage{V: wire.Version, Thing: l.Thing, Seq: uint64(i)}
	for n := f.First; n <= f.Last; n++ {
		m.Samples = append(m.Samples, wire.Sample{
			T: f.At.Add(time.Duration(n-f.First) * 20 * time.Millisecond).UTC(), Kind: "weight_g", Value: float64(n) / 1000,
		})
	}
	p, _ := json.Marshal(m)
	return p
}
