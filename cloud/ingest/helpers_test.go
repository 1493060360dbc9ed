package ingest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(crashChild())
	}
	lstest.Main(m, localstack.DynamoDB, localstack.MQTT)
}

// hangGuard bounds waits that should end quickly; it is not a performance
// assertion.
const hangGuard = 2 * time.Minute

func uniq(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

func testLogger(t testing.TB) *slog.Logger { return testkit.Logger(t, slog.LevelWarn) }

// recorder is an Observer that keeps every ack and rejection.
type recorder struct {
	mu       sync.Mutex
	acks     []ack
	rejected map[ingest.Reason]int
	emitted  int
	dups     int
	check    func(a ack) // called on every ack, before the PUBACK
}

type ack struct {
	kind, tenant, thing string
	seq                 uint64
}

func newRecorder() *recorder {
	return &recorder{rejected: map[ingest.Reason]int{}}
}

func (r *recorder) Received(string) {}
func (r *recorder) Rejected(_ string, reason ingest.Reason) {
	r.mu.Lock()
	r.rejected[reason]++
	r.mu.Unlock()
}
func (r *recorder) Emitted(string)   { r.mu.Lock(); r.emitted++; r.mu.Unlock() }
func (r *recorder) Duplicate(string) { r.mu.Lock(); r.dups++; r.mu.Unlock() }
func (r *recorder) GapRaised(string) {}
func (r *recorder) Acked(x ingest.Ack) {
	a := ack{x.Kind, x.Tenant, x.Thing, x.Seq}
	if r.check != nil {
		r.check(a)
	}
	r.mu.Lock()
	r.acks = append(r.acks, a)
	r.mu.Unlock()
}

func (r *recorder) ackCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acks)
}

type env struct {
	cfg      aws.Config
	ddb      *dynamodb.Client
	registry *devices.Registry
	letters  *deadletter.Store
	stack    *localstack.Stack
}

func newEnv(t *testing.T) env {
	t.Helper()
	stack := lstest.Stack(t)
	cfg := lstest.AWSConfig(t)
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	reg, err := devices.New(ddb, lstest.Names(t).AppTable(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dl, err := deadletter.New(ddb, lstest.Names(t).DeadLettersTable(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return env{cfg: cfg, ddb: ddb, registry: reg, letters: dl, stack: stack}
}

func (e env) register(t *testing.T, thing, tenant string) {
	t.Helper()
	if _, err := e.registry.Register(context.Background(), thing, tenant); err != nil {
		t.Fatal(err)
	}
}

// startIngest runs an ingester until the test ends and waits until it has
// subscribed.
func (e env) startIngest(t *testing.T, obs ingest.Observer, tweak func(*ingest.Config)) *ingest.Ingester {
	t.Helper()
	cfg := ingest.Config{
		Broker:   e.stack.MQTTAddr,
		ClientID: uniq("ingest"),
		Group:    uniq("g"),
		Logger:   testLogger(t),
		Observer: obs,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	a, err := app.Open(app.Config{AWS: e.cfg, Names: lstest.Names(t), Logger: cfg.Logger, Part: app.PartIngest})
	if err != nil {
		t.Fatal(err)
	}
	in, err := a.Ingest(cfg)
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v; want nil after cancel", err)
		}
		a.Close()
	})
	select {
	case <-in.Ready():
	case err := <-done:
		t.Fatalf("Run() = %v before subscribing", err)
	case <-time.After(hangGuard):
		t.Fatal("ingest never subscribed")
	}
	return in
}

// publisher connects a QoS 1 MQTT publisher.
func (e env) publisher(t *testing.T) mqtt.Client {
	t.Helper()
	c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(e.stack.MQTTAddr).SetClientID(uniq("pub")).SetCleanSession(true))
	if tok := c.Connect(); !tok.WaitTimeout(hangGuard) || tok.Error() != nil {
		t.Fatalf("publisher connect: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

func publish(t *testing.T, c mqtt.Client, topic string, payload any) {
	t.Helper()
	var body []byte
	switch p := payload.(type) {
	case []byte:
		body = p
	case string:
		body = []byte(p)
	default:
		var err error
		if body, err = json.Marshal(p); err != nil {
			t.Fatal(err)
		}
	}
	tok := c.Publish(topic, 1, false, body)
	if !tok.WaitTimeout(hangGuard) || tok.Error() != nil {
		t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

// events returns the tenant's emitted events, in chain order.
func (e env) events(t *testing.T, tenant string) []engine.Envelope {
	t.Helper()
	var envs []engine.Envelope
	p := dynamodb.NewQueryPaginator(e.ddb, &dynamodb.QueryInput{
		TableName:                 aws.String(lstest.Names(t).EventsTable()),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: engine.EventPK(tenant)}},
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			env, err := engine.DecodeItem(it)
			if err != nil {
				t.Fatal(err)
			}
			envs = append(envs, env)
		}
	}
	return envs
}

func event(thing string, seq uint64, id, typ string, data any) map[string]any {
	return map[string]any{"v": 1, "thing": thing, "seq": seq, "id": id, "type": typ, "at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano), "data": data}
}

func topic(tenant, thing, kind string) string {
	return fmt.Sprintf("dt/bowline/%s/%s/%s", tenant, thing, kind)
}
