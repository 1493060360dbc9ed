package relay

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// The relay child: the test binary re-executed to run a relay as a real
// process that the crash test kills with SIGKILL.
const (
	childEnv      = "BOWLINE_RELAY_TEST_CHILD"
	childQueueEnv = "BOWLINE_RELAY_TEST_QUEUE"
	childPipeEnv  = "BOWLINE_RELAY_TEST_PIPE"
	childDLQEnv   = "BOWLINE_RELAY_TEST_DLQ"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	lstest.Main(m, localstack.DynamoDB, localstack.SQS)
}

func runChild() int {
	ctx := context.Background()
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	names, err := resources.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	spec := EventsPipe
	spec.Name = os.Getenv(childPipeEnv)
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	r, err := New(Config{
		Pipe: spec, Streams: dynamodbstreams.NewFromConfig(cfg), Table: names.EventsTable(), Tables: ddb,
		Queue: sqs.NewFromConfig(cfg), QueueURL: os.Getenv(childQueueEnv), DeadLetterURL: os.Getenv(childDLQEnv),
		Checkpoints: ddb, CheckpointTable: names.InboxTable(), PollInterval: 50 * time.Millisecond, ShardRefresh: time.Second,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := r.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type fixture struct {
	ddb   *dynamodb.Client
	sqs   *sqs.Client
	names resources.Names
	queue string
	// dlq takes the relay's dead letters: the events table is shared by
	// the package's tests, and every new pipe reads it from the start, so
	// one test's undeliverable row must not hold another's relay.
	dlq string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	q := enginetest.FIFOQueues(t, "relay", 30*time.Second, 5)
	return fixture{ddb: dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions), sqs: sqs.NewFromConfig(cfg), names: lstest.Names(t), queue: q.URL,
		dlq: enginetest.StandardQueue(t, "pipes-dlq")}
}

func (f fixture) relay(t *testing.T, pipe string) *Relay {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	spec := EventsPipe
	spec.Name = pipe
	r, err := New(Config{
		Pipe: spec, Streams: dynamodbstreams.NewFromConfig(cfg), Table: f.names.EventsTable(), Tables: f.ddb,
		Queue: f.sqs, QueueURL: f.queue, DeadLetterURL: f.dlq, Checkpoints: f.ddb, CheckpointTable: f.names.InboxTable(),
		PollInterval: 50 * time.Millisecond, ShardRefresh: time.Second,
		Logger: testkit.Logger(t, slog.LevelWarn),
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeEvents writes n event rows (and their head rows) for tenant.
func (f fixture) writeEvents(ctx context.Context, t *testing.T, tenant string, from, n int) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for i := range n {
		env := enginetest.Envelope(t, tenant, "bowl.refilled", uint64(from+i+1), nil)
		if err := enginetest.PutEventRow(ctx, f.ddb, f.names.EventsTable(), env); err != nil {
			t.Fatal(err)
		}
		ids[env.ID] = true
	}
	return ids
}

// drainInto drains the queue into seen (tenant's events by id, counting
// duplicates) until stop(seen) is true.
func (f fixture) drainInto(ctx context.Context, t *testing.T, tenant string, seen map[string]int, stop func(map[string]int) bool) {
	t.Helper()
	done := 0
	enginetest.Drain(ctx, t, f.sqs, f.queue, func(got []enginetest.Drained) bool {
		for _, m := range got[done:] {
			if m.GroupID != tenant {
				continue
			}
			env, err := engine.DecodeImageJSON([]byte(m.Body))
			if err != nil {
				t.Fatalf("message body is not an event row: %v\n%s", err, m.Body)
			}
			if m.DedupID != env.ID {
				t.Errorf("dedup id = %q; want the event id %q", m.DedupID, env.ID)
			}
			seen[env.ID]++
		}
		done = len(got)
		return stop(seen)
	})
}

func all(want map[string]bool) func(map[string]int) bool {
	return func(seen map[string]int) bool {
		for id := range want {
			if seen[id] == 0 {
				return false
			}
		}
		return true
	}
}

// TestRelayForwardsEventRowsOnly: every inserted event row arrives once,
// grouped by tenant with the event id as dedup id; head rows never do.
func TestRelayForwardsEventRowsOnly(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	tenant := "t" + strings.ToLower(ulid.Make().String())
	want := f.writeEvents(ctx, t, tenant, 0, 25)
	r := f.relay(t, "events-"+ulid.Make().String())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	seen := map[string]int{}
	f.drainInto(ctx, t, tenant, seen, all(want))
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v; want nil after cancel", err)
	}
	if len(seen) != len(want) {
		t.Errorf("distinct events = %d; want %d", len(seen), len(want))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("event %s arrived %d times; want 1 (no crash, no duplicates)", id, n)
		}
	}
}

// TestRelayCrashLosesNothing: kill -9 the relay process mid-stream, write
// more, restart it: every event arrives (duplicates allowed, losses not),
// head rows never.
func TestRelayCrashLosesNothing(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Second)
	defer cancel()
	tenant := "t" + strings.ToLower(ulid.Make().String())
	pipe := "events-crash-" + ulid.Make().String()

	start := func() *testkit.Child {
		cmd := testkit.TestBinary("-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", childQueueEnv+"="+f.queue, childPipeEnv+"="+pipe, childDLQEnv+"="+f.dlq)
		return testkit.StartChild(t, "relay", cmd)
	}
	want := f.writeEvents(ctx, t, tenant, 0, 60)
	first := start()
	// Let the first relay forward part of the stream while more is written.
	more := f.writeEvents(ctx, t, tenant, 60, 60)
	seen := map[string]int{}
	f.drainInto(ctx, t, tenant, seen, func(seen map[string]int) bool { return len(seen) >= 20 })
	if err := first.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait(ctx)
	for id := range more {
		want[id] = true
	}
	for id := range f.writeEvents(ctx, t, tenant, 120, 30) {
		want[id] = true
	}
	start() // killed at cleanup
	f.drainInto(ctx, t, tenant, seen, all(want))
	for id := range seen {
		if !want[id] {
			t.Errorf("unexpected event %s in the queue", id)
		}
	}
	t.Logf("%d events, %d messages received across the kill", len(want), sum(seen))
}

func sum(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}
