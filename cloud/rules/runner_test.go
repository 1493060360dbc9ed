package rules_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/cloud/telemetry"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/mosquitto"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.Kinesis, localstack.SQS) }

var seq atomic.Int64

// unique returns a name no other test of this binary uses.
func unique(prefix string) string {
	return fmt.Sprintf("%s%d-%d", prefix, time.Now().UnixNano()%1e9, seq.Add(1))
}

// brokers are the brokers every broker test runs on: the embedded mochi of
// `bowline dev` and the tests, and Debian's Mosquitto.
var brokers = []struct {
	name  string
	start func(t *testing.T) string // returns the URL
}{
	{"mochi", func(t *testing.T) string {
		b, err := mqttbroker.Start(mqttbroker.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b.URL()
	}},
	{"mosquitto", func(t *testing.T) string {
		testkit.Need(t, mosquitto.Available())
		b, err := mosquitto.Start(t.Context(), mosquitto.Config{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b.URL()
	}},
}

// env is one test's stack: its AWS clients and names.
type env struct {
	stack, stream, errorsURL string
	kin                      *kinesis.Client
	sqs                      *sqs.Client
}

func newEnv(t *testing.T) env {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	n := lstest.Names(t)
	e := env{stack: n.Stack, stream: n.TelemetryStream(), kin: kinesis.NewFromConfig(cfg), sqs: sqs.NewFromConfig(cfg)}
	out, err := e.sqs.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(n.RuleErrorsQueue())})
	if err != nil {
		t.Fatal(err)
	}
	e.errorsURL = aws.ToString(out.QueueUrl)
	return e
}

var fixedNow = time.UnixMilli(1764633600123)

// start runs a Runner as clientID until the returned stop is called; opts
// change its configuration.
func (e env) start(t *testing.T, url, clientID string, kin telemetry.KinesisAPI, opts ...func(*rules.Config)) (*rules.Runner, func()) {
	t.Helper()
	cfg := rules.Config{
		Broker: url, ClientID: clientID, Stack: e.stack,
		Kinesis: kin, Stream: e.stream, SQS: e.sqs, ErrorQueueURL: e.errorsURL,
		Producer: telemetry.ProducerConfig{
			Linger: 5 * time.Millisecond, BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
			CallTimeout: 2 * time.Second,
		},
		DrainTimeout: 200 * time.Millisecond,
		Now:          func() time.Time { return fixedNow },
		Logger:       testkit.Logger(t, slog.LevelWarn),
	}
	for _, o := range opts {
		o(&cfg)
	}
	r, err := rules.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	select {
	case <-r.Ready():
	case err := <-done:
		t.Fatalf("runner stopped before subscribing: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("runner did not subscribe within 20s")
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return r, stop
}

// publish sends one QoS 1 message and waits for its PUBACK.
func publish(t *testing.T, url, topic string, payload []byte) {
	t.Helper()
	c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(unique("pub")).SetAutoReconnect(false))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect publisher: %v", tok.Error())
	}
	defer c.Disconnect(100)
	if tok := c.Publish(topic, 1, false, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

// stuckKinesis accepts nothing: every call waits for its deadline.
type stuckKinesis struct{}

func (stuckKinesis) PutRecords(ctx context.Context, _ *kinesis.PutRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// refusingKinesis answers every record with a throttling error code.
type refusingKinesis struct{}

func (refusingKinesis) PutRecords(_ context.Context, in *kinesis.PutRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	out := &kinesis.PutRecordsOutput{Records: make([]ktypes.PutRecordsResultEntry, len(in.Records)), FailedRecordCount: aws.Int32(int32(len(in.Records)))}
	for i := range out.Records {
		out.Records[i] = ktypes.PutRecordsResultEntry{ErrorCode: aws.String("ProvisionedThroughputExceededException"), ErrorMessage: aws.String("rate exceeded")}
	}
	return out, nil
}

// records reads every record of the stream whose tenant is tenant.
func (e env) records(t *testing.T, tenant string) map[string][]byte {
	t.Helper()
	ctx := t.Context()
	shards, err := e.kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(e.stream)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, sh := range shards.Shards {
		it, err := e.kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(e.stream), ShardId: sh.ShardId, ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		for iter := it.ShardIterator; iter != nil; {
			out, err := e.kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(10000)})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range out.Records {
				var rec struct{ Tenant, Payload string }
				if json.Unmarshal(r.Data, &rec) == nil && rec.Tenant == tenant {
					got[aws.ToString(r.PartitionKey)+" "+rec.Payload] = r.Data
				}
			}
			if len(out.Records) == 0 || aws.ToInt64(out.MillisBehindLatest) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	return got
}

// TestRunnerAcksOnlyDurableRecords, on each broker: a batch published by
// Basic Ingest and v1 telemetry (by Basic Ingest and through the broker)
// reach the stand-in. While Kinesis accepts nothing the messages stay
// unacknowledged, so a stand-in that stops then leaves them in its
// session; its successor under the same client id gets them again, puts
// exactly the records Spec.Evaluate gives into the stream and
// acknowledges them, so a third run gets nothing.
func TestRunnerAcksOnlyDurableRecords(t *testing.T) {
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t)
			url := b.start(t)
			tenant, id := unique("t"), unique("rules")
			batch := []byte{0x02, 0xde, 0xad, 0xbe, 0xef}
			v1 := []byte(`{"v":1,"thing":"gw-1:kitchen","seq":1}`)
			msgs := []struct {
				spec    rules.Spec
				topic   string
				payload []byte
			}{
				{rules.Telemetry, wire.BasicIngestTopic(rules.Telemetry.Name(e.stack), wire.Topic{Tenant: tenant, Thing: "gw-1", Kind: wire.KindBatch}), batch},
				{rules.TelemetryV1, wire.Topic{Tenant: tenant, Thing: "gw-1:kitchen", Kind: wire.KindTelemetry}.String(), v1},
				{rules.TelemetryV1, wire.BasicIngestTopic(rules.TelemetryV1.Name(e.stack), wire.Topic{Tenant: tenant, Thing: "gw-2", Kind: wire.KindTelemetry}), v1},
			}
			first, stop := e.start(t, url, id, stuckKinesis{})
			for _, m := range msgs {
				publish(t, url, m.topic, m.payload)
			}
			testkit.WaitFor(t, "three evaluations", 10*time.Second, func() bool {
				c := first.Counts()
				return c[rules.Telemetry.Base].Evaluations == 1 && c[rules.TelemetryV1.Base].Evaluations == 2
			})
			stop()
			if c := first.Counts(); c[rules.Telemetry.Base].Actions+c[rules.TelemetryV1.Base].Actions != 0 {
				t.Fatalf("counts with a stuck Kinesis = %+v; want no action", c)
			}

			second, stop := e.start(t, url, id, e.kin)
			testkit.WaitFor(t, "three actions after redelivery", 15*time.Second, func() bool {
				c := second.Counts()
				return c[rules.Telemetry.Base].Actions == 1 && c[rules.TelemetryV1.Base].Actions == 2
			})
			stop()
			want := map[string][]byte{}
			for _, m := range msgs {
				inner := m.topic
				if _, in, ok := wire.SplitBasicIngest(m.topic); ok {
					inner = in
				}
				rec, key, err := m.spec.Evaluate(inner, m.payload, fixedNow)
				if err != nil {
					t.Fatal(err)
				}
				want[key+" "+base64.StdEncoding.EncodeToString(m.payload)] = rec
			}
			got := e.records(t, tenant)
			for k, w := range want {
				if string(got[k]) != string(w) {
					t.Errorf("stream record %q = %s; want %s", k, got[k], w)
				}
			}
			if len(got) != len(want) {
				t.Errorf("stream holds %d records of tenant %s; want %d", len(got), tenant, len(want))
			}

			third, _ := e.start(t, url, id, e.kin)
			time.Sleep(time.Second)
			for rule, c := range third.Counts() {
				if c.Evaluations != 0 {
					t.Errorf("rule %s evaluated %d messages after they were acknowledged; want 0", rule, c.Evaluations)
				}
			}
		})
	}
}

// TestRefusedRecordGoesToErrorQueue: a record Kinesis refuses on every
// attempt goes to rule-errors as AWS's error action message, is counted,
// and its MQTT message is acknowledged (a successor gets nothing).
func TestRefusedRecordGoesToErrorQueue(t *testing.T) {
	e := newEnv(t)
	url := brokers[0].start(t)
	tenant, id := unique("t"), unique("rules")
	payload := []byte{0x02, 0x01, 0x02}
	topic := wire.BasicIngestTopic(rules.Telemetry.Name(e.stack), wire.Topic{Tenant: tenant, Thing: "gw-9", Kind: wire.KindBatch})
	r, stop := e.start(t, url, id, refusingKinesis{})
	publish(t, url, topic, payload)
	var msg rules.ErrorMessage
	testkit.WaitFor(t, "an error message for "+tenant, 20*time.Second, func() bool {
		out, err := e.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.errorsURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			var em rules.ErrorMessage
			if json.Unmarshal([]byte(aws.ToString(m.Body)), &em) == nil && em.Topic == topic {
				msg = em
				return true
			}
		}
		return false
	})
	if msg.RuleName != rules.Telemetry.Name(e.stack) || msg.Base64OriginalPayload != base64.StdEncoding.EncodeToString(payload) || msg.ClientID != "" {
		t.Errorf("error message = %+v; want rule %s, payload %x, no client id", msg, rules.Telemetry.Name(e.stack), payload)
	}
	if len(msg.Failures) != 1 || msg.Failures[0].FailedAction != rules.KinesisAction || msg.Failures[0].FailedResource != e.stream || msg.Failures[0].ErrorMessage == "" {
		t.Errorf("error message failures = %+v; want one KinesisAction on %s with a message", msg.Failures, e.stream)
	}
	testkit.WaitFor(t, "the error counted", 5*time.Second, func() bool { return r.Counts()[rules.Telemetry.Base].Errors == 1 })
	stop()
	if c := r.Counts()[rules.Telemetry.Base]; c.Actions != 0 || c.Evaluations != 1 || c.EvaluationUnits != 1 {
		t.Errorf("counts = %+v; want 1 evaluation of 1 unit, no action", c)
	}
	next, _ := e.start(t, url, id, e.kin)
	time.Sleep(time.Second)
	if c := next.Counts()[rules.Telemetry.Base]; c.Evaluations != 0 {
		t.Errorf("successor evaluated %d messages; want 0 (the error action acknowledged it)", c.Evaluations)
	}
}

// gatedKinesis passes PutRecords to Kinesis once open is closed; until then
// every call waits.
type gatedKinesis struct {
	telemetry.KinesisAPI
	open    chan struct{}
	waiting atomic.Int64
}

func (g *gatedKinesis) PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.KinesisAPI.PutRecords(ctx, in, opts...)
}

// peakObserver is the stand-in's Metrics, and keeps the highest number of
// messages in flight it was told of.
type peakObserver struct {
	*rules.Metrics
	mu        sync.Mutex
	cur, peak int
}

func (p *peakObserver) InFlight(delta int) {
	p.Metrics.InFlight(delta)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur += delta
	p.peak = max(p.peak, p.cur)
}

func (p *peakObserver) get() (cur, peak int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur, p.peak
}

// TestSlowKinesisHoldsInFlightAtTheBound, on each broker: while Kinesis
// takes nothing, the stand-in takes MaxInFlight messages and no more (the
// broker keeps the rest, its in-flight window unbounded); once Kinesis
// takes records, every message published reaches the stream once, and
// the in-flight gauge is back at 0.
func TestSlowKinesisHoldsInFlightAtTheBound(t *testing.T) {
	const bound, messages = 5, 60
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t)
			url := b.start(t)
			tenant := unique("t")
			kin := &gatedKinesis{KinesisAPI: e.kin, open: make(chan struct{})}
			reg := prometheus.NewRegistry()
			obs := &peakObserver{Metrics: rules.NewMetrics(reg)}
			r, stop := e.start(t, url, unique("rules"), kin, func(c *rules.Config) {
				c.MaxInFlight, c.Observer = bound, obs
				// Calls wait at the gate for as long as the test needs.
				c.Producer.CallTimeout = time.Minute
			})
			pub := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(unique("pub")).SetAutoReconnect(false))
			if tok := pub.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				t.Fatalf("connect publisher: %v", tok.Error())
			}
			defer pub.Disconnect(100)
			for i := range messages {
				topic := wire.BasicIngestTopic(rules.Telemetry.Name(e.stack), wire.Topic{Tenant: tenant, Thing: fmt.Sprintf("gw-%d", i), Kind: wire.KindBatch})
				// 8 KiB each, so the stand-in's socket holds few of them.
				payload := make([]byte, 8<<10)
				payload[0] = byte(i)
				if tok := pub.Publish(topic, 1, false, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
					t.Fatalf("publish %s: %v", topic, tok.Error())
				}
			}
			testkit.WaitFor(t, fmt.Sprintf("%d messages in flight and a PutRecords waiting", bound), 10*time.Second, func() bool {
				cur, _ := obs.get()
				return cur == bound && kin.waiting.Load() > 0
			})
			if got := gauge(t, reg, "bowline_rules_in_flight_messages"); got != bound {
				t.Errorf("bowline_rules_in_flight_messages = %v while Kinesis waits; want %d", got, bound)
			}
			close(kin.open)
			testkit.WaitFor(t, fmt.Sprintf("%d actions", messages), 30*time.Second, func() bool {
				return r.Counts()[rules.Telemetry.Base].Actions == messages
			})
			stop()
			if _, peak := obs.get(); peak > bound {
				t.Errorf("peak messages in flight = %d; want at most %d", peak, bound)
			}
			if got := r.InFlight(); got != 0 {
				t.Errorf("InFlight() = %d after every record is in; want 0", got)
			}
			if got := gauge(t, reg, "bowline_rules_in_flight_messages"); got != 0 {
				t.Errorf("bowline_rules_in_flight_messages = %v at the end; want 0", got)
			}
			if got := len(e.records(t, tenant)); got != messages {
				t.Errorf("stream holds %d distinct records of tenant %s; want %d", got, tenant, messages)
			}
		})
	}
}

// gauge reads one unlabelled gauge of reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// TestUnits: AWS IoT meters in 5 KB increments.
func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want int64
	}{{0, 1}, {1, 1}, {5120, 1}, {5121, 2}, {10240, 2}, {128 * 1024, 26}} {
		if got := rules.Units(tc.n); got != tc.want {
			t.Errorf("Units(%d) = %d; want %d", tc.n, got, tc.want)
		}
	}
}
