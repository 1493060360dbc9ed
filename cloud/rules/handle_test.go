package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/telemetry"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// memKinesis accepts every record and keeps it.
type memKinesis struct {
	mu      sync.Mutex
	recs    []ktypes.PutRecordsRequestEntry
	streams []string // per record, the stream it was put into
}

func (m *memKinesis) PutRecords(_ context.Context, in *kinesis.PutRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, in.Records...)
	for range in.Records {
		m.streams = append(m.streams, aws.ToString(in.StreamName))
	}
	return &kinesis.PutRecordsOutput{Records: make([]ktypes.PutRecordsResultEntry, len(in.Records)), FailedRecordCount: aws.Int32(0)}, nil
}

// memSQS keeps every body sent.
type memSQS struct {
	mu     sync.Mutex
	bodies []string
}

func (m *memSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bodies = append(m.bodies, aws.ToString(in.MessageBody))
	return &sqs.SendMessageOutput{}, nil
}

func newTestRunner(t *testing.T, kin *memKinesis, q *memSQS, obs Observer) *Runner {
	t.Helper()
	r, err := New(Config{
		Broker: "tcp://127.0.0.1:1", Stack: "dev", Kinesis: kin, Stream: "dev-bowline-telemetry",
		SQS: q, ErrorQueueURL: "http://q/rule-errors", Observer: obs,
		Now:      func() time.Time { return time.UnixMilli(1) },
		Logger:   testkit.Logger(t, slog.LevelError),
		Producer: telemetryConfig(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

func telemetryConfig() telemetry.ProducerConfig {
	return telemetry.ProducerConfig{Linger: time.Millisecond, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}
}

// TestHandleWithoutBroker: the rule of a Basic Ingest topic and of a v1
// broker topic runs and is acknowledged once Kinesis has the record; a
// record Kinesis could never take goes straight to the error queue; a topic
// of no rule is acknowledged and dropped; counts and metrics agree.
func TestHandleWithoutBroker(t *testing.T) {
	kin, q := &memKinesis{}, &memSQS{}
	reg := prometheus.NewRegistry()
	r := newTestRunner(t, kin, q, NewMetrics(reg))
	var mu sync.Mutex
	acked := map[string]int{}
	ack := func(topic string) func() {
		return func() { mu.Lock(); acked[topic]++; mu.Unlock() }
	}
	batchTopic := wire.BasicIngestTopic(Telemetry.Name("dev"), wire.Topic{Tenant: "t1", Thing: "gw-1", Kind: wire.KindBatch})
	v1Topic := wire.Topic{Tenant: "t1", Thing: "gw-1:kitchen", Kind: wire.KindTelemetry}.String()
	huge := wire.BasicIngestTopic(Telemetry.Name("dev"), wire.Topic{Tenant: "t1", Thing: "gw-2", Kind: wire.KindBatch})
	other := "dt/bowline/t1/gw-1/status"
	big := []byte(strings.Repeat("x", 800<<10)) // 800 KiB: over 1 MiB once base64
	for _, m := range []struct {
		topic   string
		payload []byte
	}{{batchTopic, make([]byte, 6000)}, {v1Topic, []byte(`{"v":1}`)}, {huge, big}, {other, []byte("{}")}} {
		if err := r.Handle(context.Background(), m.topic, m.payload, ack(m.topic)); err != nil {
			t.Fatalf("Handle(%s): %v", m.topic, err)
		}
	}
	testkit.WaitFor(t, "every message settled", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return acked[batchTopic] == 1 && acked[v1Topic] == 1 && acked[huge] == 1 && acked[other] == 1
	})
	kin.mu.Lock()
	keys := []string{}
	for _, rec := range kin.recs {
		keys = append(keys, aws.ToString(rec.PartitionKey))
	}
	kin.mu.Unlock()
	if len(keys) != 2 {
		t.Errorf("Kinesis got records with keys %v; want gw-1 and gw-1:kitchen", keys)
	}
	q.mu.Lock()
	if len(q.bodies) != 1 {
		t.Fatalf("error queue got %d messages; want 1 (the record over 1 MiB)", len(q.bodies))
	}
	var em ErrorMessage
	if err := json.Unmarshal([]byte(q.bodies[0]), &em); err != nil || em.Topic != huge || em.RuleName != "bowline_dev_telemetry" {
		t.Errorf("error message %s (%v); want topic %s of bowline_dev_telemetry", q.bodies[0], err, huge)
	}
	q.mu.Unlock()
	c := r.Counts()
	if got := c[Telemetry.Base]; got.Evaluations != 2 || got.EvaluationUnits != 2+Units(len(big)) || got.Actions != 1 || got.ActionUnits != 2 || got.Errors != 1 {
		t.Errorf("telemetry counts = %+v; want 2 evaluations (%d units), 1 action of 2 units, 1 error", got, 2+Units(len(big)))
	}
	if got := c[TelemetryV1.Base]; got.Evaluations != 1 || got.Actions != 1 || got.Errors != 0 {
		t.Errorf("telemetry_v1 counts = %+v; want 1 evaluation, 1 action", got)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			got[key] = m.GetCounter().GetValue()
		}
	}
	for key, want := range map[string]float64{
		"bowline_rules_evaluations_total rule=telemetry":         2,
		"bowline_rules_actions_total rule=telemetry_v1":          1,
		"bowline_rules_action_units_total rule=telemetry":        2,
		"bowline_rules_errors_total rule=telemetry stage=action": 1,
		"bowline_rules_evaluation_units_total rule=telemetry_v1": 1,
	} {
		if got[key] != want {
			t.Errorf("metric %s = %v; want %v", key, got[key], want)
		}
	}
}

// TestEventsGoToTheEventsStream: each rule acts on its own stream
// (Config.Streams): a bowl event, by Basic Ingest or through the broker
// (v1), goes to the events stream with its tenant as partition key; a
// batch to the telemetry stream.
func TestEventsGoToTheEventsStream(t *testing.T) {
	kin, q := &memKinesis{}, &memSQS{}
	r, err := New(Config{
		Broker: "tcp://127.0.0.1:1", Stack: "dev", Kinesis: kin, Stream: "dev-bowline-telemetry",
		Streams: map[string]string{Events.Base: "dev-bowline-events"},
		SQS:     q, ErrorQueueURL: "http://q/rule-errors",
		Logger: testkit.Logger(t, slog.LevelError), Producer: telemetryConfig(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	var acks sync.WaitGroup
	for _, topic := range []string{
		wire.BasicIngestTopic(Events.Name("dev"), wire.Topic{Tenant: "t1", Thing: "gw-1:kitchen", Kind: wire.KindEvents}),
		wire.Topic{Tenant: "t2", Thing: "gw-9", Kind: wire.KindEvents}.String(),
		wire.BasicIngestTopic(Telemetry.Name("dev"), wire.Topic{Tenant: "t1", Thing: "gw-1", Kind: wire.KindBatch}),
	} {
		acks.Add(1)
		if err := r.Handle(context.Background(), topic, []byte(`{"v":1}`), acks.Done); err != nil {
			t.Fatalf("Handle(%s): %v", topic, err)
		}
	}
	acks.Wait()
	kin.mu.Lock()
	defer kin.mu.Unlock()
	got := map[string]string{}
	for i, rec := range kin.recs {
		got[aws.ToString(rec.PartitionKey)] = kin.streams[i]
	}
	want := map[string]string{"t1": "dev-bowline-events", "t2": "dev-bowline-events", "gw-1": "dev-bowline-telemetry"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("records by partition key -> stream = %v; want %v", got, want)
	}
}

// partialKinesis refuses, in its first call, the records whose partition
// key is in refuse (a per-entry ErrorCode, as PutRecords reports a partial
// failure) and accepts every other record. It records every call's keys
// and, per key, the records it accepted.
type partialKinesis struct {
	refuse map[string]bool
	mu     sync.Mutex
	calls  [][]string
	in     map[string][][]byte // accepted records by partition key
}

func (k *partialKinesis) PutRecords(_ context.Context, in *kinesis.PutRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	first := len(k.calls) == 0
	var keys []string
	out := &kinesis.PutRecordsOutput{Records: make([]ktypes.PutRecordsResultEntry, len(in.Records)), FailedRecordCount: aws.Int32(0)}
	for i, e := range in.Records {
		key := aws.ToString(e.PartitionKey)
		keys = append(keys, key)
		if first && k.refuse[key] {
			code := "ProvisionedThroughputExceededException"
			if i%2 == 1 {
				code = "InternalFailure"
			}
			out.Records[i] = ktypes.PutRecordsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String("refused by the test")}
			*out.FailedRecordCount++
			continue
		}
		out.Records[i] = ktypes.PutRecordsResultEntry{SequenceNumber: aws.String(fmt.Sprint(len(k.calls), i)), ShardId: aws.String("shardId-000000000000")}
		k.in[key] = append(k.in[key], e.Data)
	}
	k.calls = append(k.calls, keys)
	return out, nil
}

func (k *partialKinesis) accepted(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.in[key])
}

// TestPartialPutRecordsFailureRetriesOnlyRefusedRecords: the stand-in puts
// ten messages' records in one PutRecords call; Kinesis refuses four of
// them by ErrorCode. Each message is acknowledged once, only after its own
// record is in; the retry carries the four refused records alone; each
// message is exactly one record under its own gateway's key; the counts
// are one evaluation and one action per message, as AWS IoT meters them.
func TestPartialPutRecordsFailureRetriesOnlyRefusedRecords(t *testing.T) {
	const n = 10
	kin := &partialKinesis{refuse: map[string]bool{"gw-1": true, "gw-4": true, "gw-5": true, "gw-8": true}, in: map[string][][]byte{}}
	pc := telemetryConfig()
	// One call for all ten: the batch goes when it is full.
	pc.MaxRecords, pc.Linger = n, time.Hour
	r, err := New(Config{
		Broker: "tcp://127.0.0.1:1", Stack: "dev", Kinesis: kin, Stream: "dev-bowline-telemetry",
		SQS: &memSQS{}, ErrorQueueURL: "http://q/rule-errors",
		Now:    func() time.Time { return time.UnixMilli(1) },
		Logger: testkit.Logger(t, slog.LevelError), Producer: pc,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	var mu sync.Mutex
	acks := map[string]int{}
	var early []string
	wantUnits := int64(0)
	for i := range n {
		gw := fmt.Sprintf("gw-%d", i)
		topic := wire.BasicIngestTopic(Telemetry.Name("dev"), wire.Topic{Tenant: "t1", Thing: gw, Kind: wire.KindBatch})
		payload := make([]byte, 1000*(i+1)) // 1 to 10 kB: one or two units
		_, inner, _ := wire.SplitBasicIngest(topic)
		rec, _, err := Telemetry.Evaluate(inner, payload, time.UnixMilli(1))
		if err != nil {
			t.Fatal(err)
		}
		wantUnits += Units(len(rec))
		ack := func() {
			mu.Lock()
			defer mu.Unlock()
			acks[gw]++
			if kin.accepted(gw) == 0 {
				early = append(early, gw)
			}
		}
		if err := r.Handle(context.Background(), topic, payload, ack); err != nil {
			t.Fatalf("Handle(%s): %v", topic, err)
		}
	}
	testkit.WaitFor(t, "every message acknowledged", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acks) == n
	})
	mu.Lock()
	for gw, c := range acks {
		if c != 1 {
			t.Errorf("%s acknowledged %d times; want 1", gw, c)
		}
	}
	if len(early) > 0 {
		t.Errorf("acknowledged before their record was in: %v", early)
	}
	mu.Unlock()
	kin.mu.Lock()
	calls := kin.calls
	for i := range n {
		gw := fmt.Sprintf("gw-%d", i)
		if got := len(kin.in[gw]); got != 1 {
			t.Errorf("records under key %s = %d; want 1", gw, got)
		}
	}
	kin.mu.Unlock()
	if len(calls) != 2 || len(calls[0]) != n || !sameKeys(calls[1], []string{"gw-1", "gw-4", "gw-5", "gw-8"}) {
		t.Errorf("PutRecords calls = %v; want one of all %d records, then one of gw-1, gw-4, gw-5, gw-8", calls, n)
	}
	if got := r.Counts()[Telemetry.Base]; got.Evaluations != n || got.Actions != n || got.ActionUnits != wantUnits || got.Errors != 0 {
		t.Errorf("counts = %+v; want %d evaluations, %d actions of %d units, no error", got, n, n, wantUnits)
	}
	if got := r.InFlight(); got != 0 {
		t.Errorf("InFlight() = %d; want 0", got)
	}
}

func sameKeys(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}
