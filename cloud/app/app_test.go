package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/smithy-go/middleware"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB, localstack.SQS, localstack.Kinesis) }

func TestOpenRefusesAnIncompleteConfig(t *testing.T) {
	if _, err := app.Open(app.Config{}); err == nil || !strings.Contains(err.Error(), "Names") {
		t.Errorf("Open(zero config) = %v; want an error naming Names", err)
	}
	cfg := app.Config{Names: lstest.Names(t)}
	if _, err := app.Open(cfg); err == nil || !strings.Contains(err.Error(), "region") {
		t.Errorf("Open(no AWS config) = %v; want an error naming the region", err)
	}
}

// countCalls counts the SDK operations a config's clients make, by name.
func countCalls(calls *sync.Map) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("count", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			n, _ := calls.LoadOrStore(middleware.GetOperationName(ctx), new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
	}
}

func calls(m *sync.Map, op string) int64 {
	n, ok := m.Load(op)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// Every part built from one App shares its engine, and each queue's URL is
// resolved once per App however many parts use it.
func TestPartsShareOneEngineAndResolveQueuesOnce(t *testing.T) {
	cfg := lstest.AWSConfig(t)
	var m sync.Map
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), countCalls(&m))
	a, err := app.Open(app.Config{AWS: cfg, Names: lstest.Names(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got := calls(&m, "GetQueueUrl"); got != 0 {
		t.Errorf("Open made %d GetQueueUrl calls; want 0 (resolved on first use)", got)
	}
	ctx := t.Context()
	bound, err := bindForTest(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := a.Worker(ctx, bound, nil); err != nil {
			t.Fatalf("Worker: %v", err)
		}
		if _, err := a.Redriver(ctx, nil); err != nil {
			t.Fatalf("Redriver: %v", err)
		}
		if _, err := a.Relay(ctx, relay.EventsPipe, nil); err != nil {
			t.Fatalf("Relay: %v", err)
		}
	}
	// The API registers its metrics on the App's registry: one per App.
	if _, err := a.API(apiSettings(), nil); err != nil {
		t.Fatalf("API: %v", err)
	}
	// events.fifo, its DLQ and the pipes' DLQ, once each.
	if got := calls(&m, "GetQueueUrl"); got != 3 {
		t.Errorf("GetQueueUrl calls = %d; want 3 (events queue, its DLQ and pipes-dlq, once each)", got)
	}
	if _, err := a.Relay(ctx, relay.PipeSpec{Name: "nope"}, nil); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Relay(unknown pipe) = %v; want an error naming it", err)
	}
}

// A failing part is recorded without stopping the others; cleanups run
// after every part has returned, last registered first.
func TestGroupKeepsRunningAndCleansUpInReverse(t *testing.T) {
	g := app.NewGroup(context.Background(), nil)
	var order []string
	g.OnClose(func() error { order = append(order, "first"); return nil })
	g.OnClose(func() error { order = append(order, "second"); return errors.New("second cleanup failed") })
	var stillRunning atomic.Bool
	started := make(chan struct{})
	g.Go("steady", func(ctx context.Context) error {
		stillRunning.Store(true)
		close(started)
		<-ctx.Done()
		stillRunning.Store(false)
		order = append(order, "steady stopped")
		return nil
	})
	<-started
	boom := errors.New("boom")
	<-g.Go("broken", func(context.Context) error { return boom })
	<-g.Failed()
	if !errors.Is(g.Err(), boom) || !strings.Contains(g.Err().Error(), "broken") {
		t.Errorf("Err() = %v; want boom, named by its part", g.Err())
	}
	if !stillRunning.Load() || g.Context().Err() != nil {
		t.Error("a failed part stopped the group; want the others to keep running")
	}
	err := g.Close()
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "second cleanup failed") {
		t.Errorf("Close() = %v; want the part's and the cleanup's errors", err)
	}
	if want := []string{"steady stopped", "second", "first"}; !slices.Equal(order, want) {
		t.Errorf("order = %v; want %v", order, want)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close() = %v; want nil", err)
	}
}

func apiSettings() api.Settings {
	return api.Settings{WebhookSecret: "test-secret", OpsToken: "ops"}
}
