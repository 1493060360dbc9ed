package console_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/console"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/resources"
)

// TestPipelineMetricsAreRegistered: every metric the pipeline page reads
// is registered under that name by the part that owns it, on a registry
// built as bowline dev builds its own (app.Open registers the engine's;
// the parts' NewMetrics the rest). A renamed registration fails here
// instead of leaving a stage "not running in this process" for good.
func TestPipelineMetricsAreRegistered(t *testing.T) {
	reg := app.NewRegistry()
	// app.Open makes no AWS call: a region is all the SDK config needs.
	a, err := app.Open(app.Config{AWS: aws.Config{Region: "us-east-1"}, Names: resources.Names{Stack: "metrics"}, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ingest.NewMetrics(reg)
	durable.NewMetrics(reg)
	rules.NewMetrics(reg)
	relay.NewMetrics(reg)
	worker.NewMetrics(reg)

	names := console.Metrics()
	if len(names) == 0 {
		t.Fatal("console.Metrics() is empty; want the names the pipeline page reads")
	}
	for _, name := range names {
		if !registered(t, reg, name) {
			t.Errorf("the console reads %q; no part registers it", name)
		}
	}
	if registered(t, prometheus.NewRegistry(), names[0]) {
		t.Fatal("registered finds a metric in an empty registry")
	}
}

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
