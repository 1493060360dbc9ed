package app_test

import (
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/internal/awscalls"
	"github.com/bowline-iot/bowline/internal/resources"
)

// A part's metrics are registered once per App: asking again, or through
// a part view (which shares the registry), hands out the same adapter
// instead of registering its names a second time (a panic).
func TestPartMetricsAreRegisteredOnce(t *testing.T) {
	// With calls recorded, Part hands out a view of its own.
	rec, err := awscalls.Open(filepath.Join(t.TempDir(), "calls.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Open makes no AWS call: a region is all the SDK config needs.
	a, err := app.Open(app.Config{AWS: aws.Config{Region: "us-east-1"}, Names: resources.Names{Stack: "metrics"}, Calls: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	view := a.Part(app.PartWorker)
	if view == a {
		t.Fatal("Part with calls recorded returned the App; want a view")
	}
	if a.WorkerMetrics() != view.WorkerMetrics() || a.RelayMetrics() != a.RelayMetrics() {
		t.Error("a second ask built other metrics; want the App's")
	}
	if a.IngestMetrics() != a.IngestMetrics() || a.TelemetryConsumerMetrics() != view.TelemetryConsumerMetrics() ||
		a.RulesMetrics() != a.RulesMetrics() || a.RecordChangesMetrics() != a.RecordChangesMetrics() {
		t.Error("a second ask built other metrics; want the App's")
	}
	m1, err := a.AnchorMetrics()
	if err != nil {
		t.Fatal(err)
	}
	if m2, err := view.AnchorMetrics(); err != nil || m2 != m1 {
		t.Errorf("AnchorMetrics again = %p, %v; want %p, nil", m2, err, m1)
	}
}
