package ingest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestMain(m *testing.M) {
	if os.Getenv(deployChildEnv) != "" {
		os.Exit(deployChild())
	}
	lstest.Main(m, localstack.DynamoDB, localstack.Kinesis, localstack.SQS)
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
	ingest.NopObserver
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

// startIngest runs an ingester behind the local event source on a stream
// of its own until the test ends; publish on the returned publisher puts
// records into that stream as the events rule would.
func (e env) startIngest(t *testing.T, obs ingest.Observer, tweak func(*ingest.Config)) *ingest.Ingester {
	t.Helper()
	return e.startIngestOn(t, obs, tweak, false)
}

// startIngestOn is startIngest; with stackStream it reads the stack's own
// events stream, so the ingest role is checked on its reads (iamtest), as
// only one test of the package may. Otherwise the stream is the test's own
// and its reads are recorded as the stand-in's (not checked).
func (e env) startIngestOn(t *testing.T, obs ingest.Observer, tweak func(*ingest.Config), stackStream bool) *ingest.Ingester {
	t.Helper()
	cfg := ingest.Config{Logger: testLogger(t), Observer: obs}
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
	stream := lstest.Names(t).EventsStream()
	if !stackStream {
		stream = e.newStream(t)
	}
	r, err := a.EventsSource(context.Background(), app.IngestHandler(in), func(c *eventsource.Config) {
		if !stackStream {
			c.Stream, c.Kinesis = stream, a.Part(app.PartEventSource).Kinesis
		}
		c.PollInterval = 200 * time.Millisecond
		c.Logger = cfg.Logger
	})
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- r.Run(ctx) }()
	go func() { done <- in.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Run() = %v; want nil after cancel", err)
			}
		}
		a.Close()
	})
	streams.Store(t.Name(), stream)
	return in
}

// streams maps a test to the stream its ingester reads.
var streams sync.Map

// newStream creates a one-shard stream for one test, so tests never read
// each other's records.
func (e env) newStream(t *testing.T) string {
	t.Helper()
	kin := kinesis.NewFromConfig(e.cfg)
	name := uniq(lstest.Names(t).Stack + "-events")
	if _, err := kin.CreateStream(t.Context(), &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(1)}); err != nil {
		t.Fatalf("create stream %s: %v", name, err)
	}
	testkit.WaitFor(t, "stream "+name+" active", hangGuard, func() bool {
		out, err := kin.DescribeStreamSummary(t.Context(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		return err == nil && out.StreamDescriptionSummary.StreamStatus == ktypes.StreamStatusActive
	})
	return name
}

// publisher puts messages into the test's events stream as the events
// rule does (rules.Events.Evaluate: record format 2, partition key the
// tenant).
type publisher struct {
	kin    *kinesis.Client
	stream string
	// now is the rules engine's clock (the record's received_at, which
	// ingest judges gateway clocks by); default time.Now.
	now func() time.Time
}

func (e env) publisher(t *testing.T) *publisher {
	t.Helper()
	s, ok := streams.Load(t.Name())
	if !ok {
		t.Fatal("publisher before startIngest")
	}
	return &publisher{kin: kinesis.NewFromConfig(e.cfg), stream: s.(string), now: time.Now}
}

func publish(t *testing.T, p *publisher, topic string, payload any) {
	t.Helper()
	var body []byte
	switch v := payload.(type) {
	case []byte:
		body = v
	case string:
		body = []byte(v)
	default:
		var err error
		if body, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	rec, key, err := rules.Events.Evaluate(topic, body, p.now())
	if err != nil {
		// A topic the rule's FROM does not match never reaches the stream.
		t.Fatalf("events rule on %s: %v", topic, err)
	}
	if _, err := p.kin.PutRecord(t.Context(), &kinesis.PutRecordInput{StreamName: aws.String(p.stream), PartitionKey: aws.String(key), Data: rec}); err != nil {
		t.Fatalf("put record of %s: %v", topic, err)
	}
}

// events returns the tenant's emitted events, in chain order.
func (e env) events(t *testing.T, tenant string) []engine.Envelope {
	t.Helper()
	var envs []engine.Envelope
	for env, err := range engine.NewLog(e.ddb, lstest.Names(t).EventsTable()).After(context.Background(), tenant, 0, engine.ReadOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
	}
	return envs
}

func event(thing string, seq uint64, id, typ string, data any) map[string]any {
	return map[string]any{"v": 1, "thing": thing, "seq": seq, "id": id, "type": typ, "at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano), "data": data}
}

func topic(tenant, thing, kind string) string {
	return fmt.Sprintf("dt/bowline/%s/%s/%s", tenant, thing, kind)
}
