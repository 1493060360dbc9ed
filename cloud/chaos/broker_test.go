package chaos

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/internal/mosquitto"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestBrokerOutageLosesNothing: a gateway that publishes as soon as the
// broker is back loses nothing: the outage holds the gateways' link until
// the rule stand-in has subscribed again, so an event forgotten at its
// PUBACK always has the stand-in there to take it (docs/chaos.md, "Broker
// outages").
func TestBrokerOutageLosesNothing(t *testing.T) {
	testkit.Need(t, mosquitto.Available())
	ctx := t.Context()
	dir := t.TempDir()
	broker, err := mosquitto.Start(ctx, mosquitto.Config{Dir: filepath.Join(dir, "mosquitto")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	n := newNetwork()
	t.Cleanup(n.close)
	rulesAddr, err := n.link("mqtt", broker.Addr())
	if err != nil {
		t.Fatal(err)
	}
	gwAddr, err := n.link(gatewayLink, broker.Addr())
	if err != nil {
		t.Fatal(err)
	}
	// The rule stand-in logs its subscriptions the way bowline rules does;
	// the outage reads that log.
	rs := &proc{name: procRules, log: filepath.Join(dir, procRules+".log")}
	r := &run{broker: broker, net: n, procs: map[string]*proc{procRules: rs}}

	var mu sync.Mutex
	got := map[string]bool{}
	received := func(p string) bool { mu.Lock(); defer mu.Unlock(); return got[p] }
	stand := func() paho.Client {
		o := paho.NewClientOptions().AddBroker("tcp://" + rulesAddr).SetClientID("chaos-rules").SetCleanSession(false).
			SetAutoReconnect(false).SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			mu.Lock()
			got[string(m.Payload())] = true
			mu.Unlock()
		})
		c := paho.NewClient(o)
		if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("rule stand-in connect: %v", tok.Error())
		}
		if tok := c.Subscribe("dt/#", 1, nil); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("rule stand-in subscribe: %v", tok.Error())
		}
		f, err := os.OpenFile(rs.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, `level=INFO msg="mqtt subscribed"`)
		f.Close()
		return c
	}
	sub := stand()
	sub.Disconnect(100) // offline when the broker goes down, as after a crash

	heal, err := r.brokerOutage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	healed := make(chan struct{})
	go func() { heal(); close(healed) }()
	var back atomic.Bool
	testkit.WaitFor(t, "the broker back", time.Minute, func() bool {
		c, err := net.DialTimeout("tcp", broker.Addr(), time.Second)
		if err == nil {
			c.Close()
			back.Store(true)
		}
		return err == nil
	})

	// The gateway publishes the moment the broker takes it.
	gw := paho.NewClient(paho.NewClientOptions().AddBroker("tcp://" + gwAddr).SetClientID("chaos-gw-0").
		SetCleanSession(false).SetAutoReconnect(false).SetConnectTimeout(5 * time.Second))
	t.Cleanup(func() { gw.Disconnect(100) })
	var refused atomic.Int32 // attempts refused while the broker is up
	published := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			tok := gw.Connect()
			if tok.WaitTimeout(10*time.Second) && tok.Error() == nil {
				ptok := gw.Publish("dt/a/events", 1, false, "first after the outage")
				ptok.WaitTimeout(10 * time.Second)
				published <- ptok.Error()
				return
			}
			if back.Load() {
				refused.Add(1)
			}
			time.Sleep(100 * time.Millisecond) // the gateway's reconnect backoff
		}
	}()
	// The stand-in comes back only once the gateway has had its chance.
	var early error
	isEarly := false
	testkit.WaitFor(t, "a gateway attempt", time.Minute, func() bool {
		select {
		case early = <-published:
			isEarly = true
			return true
		default:
			return refused.Load() > 0
		}
	})
	sub = stand()
	t.Cleanup(func() { sub.Disconnect(100) })
	if !isEarly {
		early = <-published
	}
	if early != nil {
		t.Fatalf("gateway publish: %v", early)
	}
	<-healed
	testkit.WaitFor(t, "the gateway's message at the rule stand-in", 30*time.Second, func() bool { return received("first after the outage") })
}
