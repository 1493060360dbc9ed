package console_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/console"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// TestPipelineMetricsAreRegistered: every metric the pipeline page reads
// is registered under that name when the parts are built as the mains and
// bowline dev build them: through cloud/app's constructors, with no
// observer of their own (app.Open registers the engine's metrics, each
// constructor its part's). A renamed registration, or a constructor that
// no longer wires its part's metrics, fails here instead of leaving a
// stage "not running in this process" for good.
func TestPipelineMetricsAreRegistered(t *testing.T) {
	ctx := t.Context()
	reg := app.NewRegistry()
	discard := slog.New(slog.DiscardHandler)
	a, err := app.Open(app.Config{AWS: lstest.AWSConfig(t), Names: lstest.Names(t), Registry: reg, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Ingest(ingest.Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.TelemetryConsumer(durable.DefaultConfig(), noAcks{}); err != nil {
		t.Fatal(err)
	}
	// No broker listens there: New does not connect, Run would.
	r, err := a.Rules(ctx, rules.Config{Broker: "tcp://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	events, recordChanges, err := a.Pipes()
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []relay.PipeSpec{events, recordChanges} {
		if _, err := a.Relay(ctx, spec, nil); err != nil {
			t.Fatal(err)
		}
	}
	set, err := a.Subscribers(adapters.Config{}, discard)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := app.Bind(set, discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Worker(ctx, bound, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RecordChanges(ctx, bound, nil); err != nil {
		t.Fatal(err)
	}

	names := console.Metrics()
	if len(names) == 0 {
		t.Fatal("console.Metrics() is empty; want the names the pipeline page reads")
	}
	for _, name := range names {
		if !registered(t, reg, name) {
			t.Errorf("the console reads %q; no part cloud/app builds registers it", name)
		}
	}
	if registered(t, prometheus.NewRegistry(), names[0]) {
		t.Fatal("registered finds a metric in an empty registry")
	}
}

// noAcks publishes nothing: the consumer is built, never run.
type noAcks struct{}

func (noAcks) Publish(context.Context, string, []byte, int) error { return nil }

// registered reports whether reg holds a metric called name. Gather
// cannot tell (a vector without series is not gathered), so it registers
// a probe of that name: the registry refuses one whose name it holds
// with other labels or help.
func registered(t *testing.T, reg *prometheus.Registry, name string) bool {
	t.Helper()
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe: is " + name + " registered?"})
	err := reg.Register(probe)
	if err == nil {
		reg.Unregister(probe)
		return false
	}
	if !strings.Contains(err.Error(), "same fully-qualified name") {
		t.Fatalf("probe %q: %v", name, err)
	}
	return true
}
