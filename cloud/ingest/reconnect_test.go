package ingest_test

import (
	"net"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/internal/mosquitto"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// attemptRecorder stands where the killed broker listened: it accepts
// each reconnection attempt, notes when, and closes it at once (a broker
// that is not back yet).
type attemptRecorder struct {
	l  net.Listener
	mu sync.Mutex
	at []time.Time
}

func (a *attemptRecorder) serve() {
	for {
		c, err := a.l.Accept()
		if err != nil {
			return
		}
		a.mu.Lock()
		a.at = append(a.at, time.Now())
		a.mu.Unlock()
		_ = c.Close()
	}
}

func (a *attemptRecorder) attempts() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.at...)
}

// TestBrokerOutageReconnectsPromptly: after the broker dies, ingest keeps
// retrying at a short, bounded interval, and resubscribes as soon as the
// broker is back. The chaos run (docs/chaos.md, seed 2) killed Mosquitto
// three times in 15 s; paho's backoff, capped at 30 s, had grown to 16 s by
// then and both ingests stayed offline for 31 s while the gateways were
// publishing again. AWS IoT allows one CONNECT per second per client id
// (docs/ingest-sessions.md, "Reconnecting"), so the cap stays above 1 s.
func TestBrokerOutageReconnectsPromptly(t *testing.T) {
	testkit.Need(t, mosquitto.Available())
	broker, err := mosquitto.Start(t.Context(), mosquitto.Config{Dir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })

	e := newEnv(t)
	tenant, thing := uniq("t"), uniq("bowl")
	e.register(t, thing, tenant)
	e.startIngest(t, newRecorder(), func(c *ingest.Config) { c.Broker = broker.URL() })

	broker.Kill()
	l, err := net.Listen("tcp", broker.Addr())
	if err != nil {
		t.Fatal(err)
	}
	rec := &attemptRecorder{l: l}
	go rec.serve()
	// Six attempts: with a doubling backoff the gaps are 1, 2, 4, 8 s and
	// on; bounded, they stay at the cap.
	const want = 6
	testkit.WaitFor(t, "ingest reconnection attempts", hangGuard, func() bool { return len(rec.attempts()) >= want })
	_ = l.Close()
	at := rec.attempts()
	var longest time.Duration
	for i := 1; i < len(at); i++ {
		longest = max(longest, at[i].Sub(at[i-1]))
	}
	// The cap is 2 s; 12 s leaves room for a loaded machine and is still
	// below the 16 s a doubling backoff reaches within these six attempts
	// (1, 2, 4, 8, 16 s; before the fix it reached its 30 s cap).
	if longest > 12*time.Second {
		t.Fatalf("longest gap between reconnection attempts = %v over %d attempts; want the backoff capped near 2s", longest.Round(time.Millisecond), len(at))
	}

	if err := broker.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	pub := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(broker.URL()).SetClientID(uniq("pub")).SetCleanSession(true))
	if tok := pub.Connect(); !tok.WaitTimeout(hangGuard) || tok.Error() != nil {
		t.Fatalf("publisher connect: %v", tok.Error())
	}
	t.Cleanup(func() { pub.Disconnect(100) })
	// Until ingest has resubscribed the broker routes the event to nobody,
	// so each poll publishes it again; ingest keeps one (same id).
	testkit.WaitFor(t, "the event published after the restart in the chain", hangGuard, func() bool {
		publish(t, pub, topic(tenant, thing, "events"), event(thing, 1, "meal-1", "bowl.meal_finished", meal(42.5)))
		return len(e.events(t, tenant)) == 1
	})
}
