package chaos

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/mosquitto"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestRuleSessionQueuesWhileAway: Mosquitto keeps the batches a gateway
// publishes while the rule stand-in is away, across a broker restart too,
// and delivers them when the stand-in's client id connects again, as
// bowline rules does (persistent session, fixed client id, QoS 1). AWS
// Basic Ingest has no subscriber to be away; a chaos run kills the stand-in
// and relies on this, with the gateway's resend after its ack timeout
// behind it (docs/chaos.md, "The telemetry path under faults").
func TestRuleSessionQueuesWhileAway(t *testing.T) {
	testkit.Need(t, mosquitto.Available())
	ctx := t.Context()
	broker, err := mosquitto.Start(ctx, mosquitto.Config{Dir: filepath.Join(t.TempDir(), "mosquitto")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	url := "tcp://" + broker.Addr()
	filter := wire.BasicIngestTopic(rules.Telemetry.Name("s"), wire.Topic{Tenant: "+", Thing: "+", Kind: wire.KindBatch})
	topic := wire.BasicIngestTopic(rules.Telemetry.Name("s"), wire.Topic{Tenant: "chaos-t0", Thing: "chaos-gw-0", Kind: wire.KindBatch})

	var mu sync.Mutex
	got := map[string]bool{}
	standIn := func() paho.Client {
		c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID("chaos-rules").SetCleanSession(false).
			SetAutoReconnect(false).SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			mu.Lock()
			got[string(m.Payload())] = true
			mu.Unlock()
		}))
		if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("stand-in connect: %v", tok.Error())
		}
		if tok := c.Subscribe(filter, 1, nil); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("stand-in subscribe %s: %v", filter, tok.Error())
		}
		return c
	}
	publish := func(payload string) {
		c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID("chaos-gw-0").SetAutoReconnect(false))
		if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("gateway connect: %v", tok.Error())
		}
		defer c.Disconnect(100)
		if tok := c.Publish(topic, 1, false, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("gateway publish %q: %v", payload, tok.Error())
		}
	}

	standIn().Disconnect(0) // away, as after a SIGKILL
	publish("batch-while-away")
	broker.Stop()
	if err := broker.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	publish("batch-after-restart")
	c := standIn()
	defer c.Disconnect(100)
	testkit.WaitFor(t, "both batches at the stand-in", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got["batch-while-away"] && got["batch-after-restart"]
	})
}
