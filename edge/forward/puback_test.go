package forward

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/pricing"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// silentHook swallows the first n PUBLISH packets whose topic ends in
// suffix: no PUBACK, no disconnect, as AWS IoT may do with a publish it
// throttles (docs/telemetry-path.md, "The gateway").
type silentHook struct {
	mqtt.HookBase
	suffix string

	mu        sync.Mutex
	n         int
	swallowed []string
}

func (h *silentHook) ID() string           { return "bowline-silent" }
func (h *silentHook) Provides(b byte) bool { return b == mqtt.OnPublish }
func (h *silentHook) Swallowed() (out []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(out, h.swallowed...)
}

func (h *silentHook) OnPublish(_ *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n > 0 && strings.HasSuffix(pk.TopicName, h.suffix) {
		h.n--
		h.swallowed = append(h.swallowed, string(pk.Payload))
		return pk, packets.ErrRejectPacket // mochi: drop, answer nothing
	}
	return pk, nil
}

// TestUnansweredPublishEndsTheSession has the broker answer nothing to the
// first 5 events while the window is 5: without a PUBACK deadline the
// forwarder holds all 5 slots for ever on a live connection. With one, the
// session ends, the forwarder reconnects, and every event, the 5 swallowed
// and 15 later ones, is delivered and leaves the outbox.
func TestUnansweredPublishEndsTheSession(t *testing.T) {
	ctx := context.Background()
	o := openOutbox(t)
	silent := &silentHook{suffix: "/events", n: 5}
	b := &testBroker{t: t, rec: new(mqttbroker.Recorder)}
	b.cfg = mqttbroker.Config{Hooks: []mqtt.Hook{silent, b.rec}}
	b.up()
	b.cfg.Addr, b.URL = b.srv.Addr(), b.srv.URL()
	t.Cleanup(b.down)

	var timeouts atomic.Int64
	f, _ := runForwarderWithObserver(t, Config{Broker: b.URL, InFlight: 5, PubackTimeout: time.Second,
		BackoffMin: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond}, o,
		pubackTimeouts(func(lane outbox.Lane) {
			if lane == outbox.Events {
				timeouts.Add(1)
			}
		}))
	for i := range 5 {
		if err := o.Append(ctx, []outbox.Entry{event("bowl-1", fmt.Sprint("early-", i))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, "5 publishes swallowed", 30*time.Second, func() bool { return len(silent.Swallowed()) == 5 })
	for i := range 15 {
		if err := o.Append(ctx, []outbox.Entry{event("bowl-1", fmt.Sprint("late-", i))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]int{}
	testkit.WaitFor(t, "20 events delivered", 30*time.Second, func() bool {
		clear(ids)
		for _, m := range b.rec.Messages() {
			if !strings.HasSuffix(m.Topic, "/events") {
				continue
			}
			var em wire.EventMessage
			if err := json.Unmarshal(m.Payload, &em); err != nil {
				t.Fatalf("event payload %s: %v", m.Payload, err)
			}
			ids[em.ID]++
		}
		return len(ids) == 20
	})
	testkit.WaitFor(t, "the outbox to empty", 30*time.Second, func() bool {
		st, err := o.Stats()
		return err == nil && st.Events.Records == 0
	})
	s := f.Status()
	if s.Connects < 2 {
		t.Errorf("Status().Connects = %d; want at least 2 (the silent session ended)", s.Connects)
	}
	// Each unanswered publish is counted, on /status and by the hook
	// behind the metric: at least one (the first to time out ends the
	// session; the others of the window may end with it, uncounted).
	if s.PubackTimeouts < 1 || s.PubackTimeouts > 5 {
		t.Errorf("Status().PubackTimeouts = %d; want 1-5 (5 publishes swallowed)", s.PubackTimeouts)
	}
	if got := timeouts.Load(); got != s.PubackTimeouts {
		t.Errorf("PubackTimeout hook calls on the events lane = %d; want %d, as Status", got, s.PubackTimeouts)
	}
}

// TestDefaultRatesAreUnderAWSQuotas holds the defaults to at most a fifth
// of AWS IoT Core's per-connection quotas (internal/pricing's table) and a
// quarter of its throughput: over them AWS throttles, and a throttled
// publish may get no PUBACK.
func TestDefaultRatesAreUnderAWSQuotas(t *testing.T) {
	c := Config{}
	c.setDefaults()
	rate := pricing.QuotaOf(pricing.QIoTConnPublishRate).Default
	throughput := pricing.QuotaOf(pricing.QIoTConnThroughput).Default
	if c.Rate > rate/5 {
		t.Errorf("default Rate = %g; want at most %g, a fifth of the %g/s quota", c.Rate, rate/5, rate)
	}
	// AWS IoT Core: 100 unacknowledged QoS 1 publishes per connection.
	if c.InFlight > 100/5 {
		t.Errorf("default InFlight = %d; want at most 20, a fifth of AWS IoT's 100", c.InFlight)
	}
	if float64(c.ByteRate) > throughput/4 {
		t.Errorf("default ByteRate = %d; want at most %g, a quarter of the %g bytes/s quota", c.ByteRate, throughput/4, throughput)
	}
	if c.PubackTimeout <= 0 || c.PubackTimeout > time.Minute {
		t.Errorf("default PubackTimeout = %s; want a bound under a minute", c.PubackTimeout)
	}
}

// pubackTimeouts observes the forwarder's PUBACK timeouts only.
type pubackTimeouts func(lane outbox.Lane)

func (pubackTimeouts) Published(outbox.Lane, int)            {}
func (pubackTimeouts) Acked(outbox.Lane, int, time.Duration) {}
func (pubackTimeouts) Connection(bool)                       {}
func (f pubackTimeouts) PubackTimeout(lane outbox.Lane)      { f(lane) }
func (pubackTimeouts) CloudAck(bool, int)                    {}
