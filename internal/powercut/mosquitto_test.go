package powercut_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/internal/mosquitto"
	"github.com/bowline-iot/bowline/internal/powercut"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// mqRun says how to drive Mosquitto through cuts.
type mqRun struct {
	autosave time.Duration // Mosquitto's autosave_interval
	cuts     int
	// publish is how long to keep publishing before cut i; 0 means
	// perCut messages as fast as PUBACKs come back.
	publish func(i int) time.Duration
	perCut  int
	rate    int // messages a second when publish is set
	// killOnly SIGKILLs the broker without cutting the power (the page
	// cache survives, as after kill -9).
	killOnly bool
}

type mqResult struct {
	cuts, acked, lost, sessionsLost int
	maxLostCut                      int // most messages lost at one cut
}

// runMosquitto: a persistent subscriber (clean session off, QoS 1) is
// offline while a QoS 1 publisher counts PUBACKs; then the power is cut,
// the mount booted, Mosquitto restarted, and the subscriber drains its
// queue up to a marker published after the restart. Every acknowledged
// message it never receives is lost.
func runMosquitto(t *testing.T, d *powercut.Disk, run mqRun) mqResult {
	t.Helper()
	testkit.Need(t, mosquitto.Available())
	ctx := t.Context()
	b, err := mosquitto.Start(ctx, mosquitto.Config{Dir: filepath.Join(d.Dir(), "mosquitto"), AutosaveInterval: run.autosave})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Kill() })
	var mu sync.Mutex
	got := map[string]bool{}
	var gotMarker chan struct{}
	marker := ""
	onMsg := func(_ paho.Client, m paho.Message) {
		mu.Lock()
		defer mu.Unlock()
		p := string(m.Payload())
		got[p] = true
		if p == marker && gotMarker != nil {
			close(gotMarker)
			gotMarker = nil
		}
	}
	sub := mqConnect(t, b.URL(), "pc-sub", false, onMsg)
	mqSubscribe(t, sub)
	sub.Disconnect(100)
	// Make the session and the config durable before the first cut: a
	// clean stop saves the database, Sync is the installer's sync.
	b.Stop()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := b.Restart(ctx); err != nil {
		t.Fatal(err)
	}

	acked := map[string]bool{}
	var res mqResult
	for i := range run.cuts {
		pub := mqConnect(t, b.URL(), "pc-pub", true, nil)
		round := map[string]bool{}
		publishOne := func(n int) {
			p := fmt.Sprintf("c%d-%d", i, n)
			tok := pub.Publish("pc/t", 1, false, p)
			if tok.WaitTimeout(10*time.Second) && tok.Error() == nil {
				acked[p], round[p] = true, true
				res.acked++
			}
		}
		if run.publish == nil {
			for n := range run.perCut {
				publishOne(n)
			}
		} else {
			// Paced at run.rate messages a second (a bench measures; it
			// asserts nothing).
			start := time.Now()
			stop := start.Add(run.publish(i))
			for n := 0; time.Now().Before(stop); n++ {
				publishOne(n)
				time.Sleep(time.Until(start.Add(time.Duration(n+1) * time.Second / time.Duration(run.rate))))
			}
		}
		if run.killOnly {
			b.Kill()
		} else if err := d.Cut(ctx, b.Kill); err != nil {
			t.Fatal(err)
		} else if err := d.Boot(); err != nil {
			t.Fatal(err)
		}
		pub.Disconnect(0)
		res.cuts++
		if err := b.Restart(ctx); err != nil {
			t.Fatalf("restart after cut %d: %v", i, err)
		}
		// Drain up to a marker published after the restart.
		mu.Lock()
		marker, gotMarker = "marker-"+strconv.Itoa(i), make(chan struct{})
		done := gotMarker
		mu.Unlock()
		var present bool
		sub, present = mqConnectSession(t, b.URL(), "pc-sub", onMsg)
		if !present {
			res.sessionsLost++
			mqSubscribe(t, sub)
		}
		pub = mqConnect(t, b.URL(), "pc-pub", true, nil)
		if tok := pub.Publish("pc/t", 1, false, "marker-"+strconv.Itoa(i)); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("marker: %v", tok.Error())
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("cut %d: the subscriber did not receive the marker", i)
		}
		pub.Disconnect(100)
		sub.Disconnect(100)
		mu.Lock()
		lost := 0
		for p := range round {
			if !got[p] {
				lost++
			}
		}
		mu.Unlock()
		res.maxLostCut = max(res.maxLostCut, lost)
	}
	mu.Lock()
	defer mu.Unlock()
	for p := range acked {
		if !got[p] {
			res.lost++
		}
	}
	return res
}

func mqConnect(t *testing.T, url, id string, clean bool, onMsg paho.MessageHandler) paho.Client {
	t.Helper()
	c, _ := mqDial(t, url, id, clean, onMsg)
	return c
}

// mqConnectSession connects a persistent session and reports whether the
// broker still had it (CONNACK session present).
func mqConnectSession(t *testing.T, url, id string, onMsg paho.MessageHandler) (paho.Client, bool) {
	t.Helper()
	return mqDial(t, url, id, false, onMsg)
}

func mqDial(t *testing.T, url, id string, clean bool, onMsg paho.MessageHandler) (paho.Client, bool) {
	t.Helper()
	o := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetCleanSession(clean).
		SetAutoReconnect(false).SetDefaultPublishHandler(onMsg)
	c := paho.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s: %v", id, tok.Error())
	}
	return c, tok.(*paho.ConnectToken).SessionPresent()
}

func mqSubscribe(t *testing.T, c paho.Client) {
	t.Helper()
	if tok := c.Subscribe("pc/t", 1, nil); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
}

// TestPowerCutMosquittoAutosave shows Mosquitto losing acknowledged QoS 1
// messages: it keeps them in memory and writes its database only every
// autosave_interval and on a clean stop. With an interval longer than the
// test nothing is saved between cuts, so every message acknowledged since
// the last save is lost, whatever the machine's speed.
func TestPowerCutMosquittoAutosave(t *testing.T) {
	d := mount(t, false)
	res := runMosquitto(t, d, mqRun{autosave: time.Hour, cuts: 3, perCut: 50})
	t.Logf("| mosquitto (autosave 1h) | %d | %d | %d | sessions lost: %d |", res.cuts, res.acked, res.lost, res.sessionsLost)
	if res.lost == 0 {
		t.Fatalf("mosquitto lost none of %d acknowledged messages over %d cuts without an autosave", res.acked, res.cuts)
	}
}

// TestPowerCutMosquittoBench is the measurement behind the table in
// docs/power-cut.md (./scripts/bench-edge --power-cut): autosave every
// second, publishing 200 messages a second for a random 1-6 s before
// each cut, once with power cuts and once with kill -9 only.
func TestPowerCutMosquittoBench(t *testing.T) {
	n := os.Getenv("BOWLINE_POWERCUT_CUTS")
	if n == "" {
		t.Skip("a bench: set BOWLINE_POWERCUT_CUTS (./scripts/bench-edge --power-cut)")
	}
	cuts, err := strconv.Atoi(n)
	if err != nil || cuts < 1 {
		t.Fatalf("BOWLINE_POWERCUT_CUTS=%q: want a positive integer", n)
	}
	for _, killOnly := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(15, 15))
		d := mount(t, false)
		res := runMosquitto(t, d, mqRun{autosave: time.Second, cuts: cuts, killOnly: killOnly, rate: 200,
			publish: func(int) time.Duration { return time.Second + time.Duration(rng.IntN(5000))*time.Millisecond }})
		name := "mosquitto (autosave 1s, power cut)"
		if killOnly {
			name = "mosquitto (autosave 1s, kill -9)"
		}
		t.Logf("| %s | %d | %d | %d | at most %.1f s of messages lost at one cut; sessions lost: %d |",
			name, res.cuts, res.acked, res.lost, float64(res.maxLostCut)/200, res.sessionsLost)
	}
}
