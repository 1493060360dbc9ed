package ingest

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/bowline-iot/bowline/cloud/telemetry"
	"github.com/bowline-iot/bowline/edge/wire"
)

func TestMetricsCountThroughObservers(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	var obs Observer = Observers(NopObserver{}, m)
	obs.Acked(Ack{Kind: wire.KindTelemetry, Tenant: "t1", Thing: "b1", Seq: 1, LastSeq: 5, Samples: 5, SinceReceipt: 3 * time.Millisecond})
	obs.Rejected(wire.KindEvents, ReasonTenantMismatch)
	obs.(telemetry.ProducerObserver).PutRecords(10, 1000, 2, nil, time.Millisecond)
	obs.(telemetry.ProducerObserver).RecordRetried("ProvisionedThroughputExceededException")
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"samples", value(t, m.samples), 5},
		{"acked telemetry", value(t, m.acked.WithLabelValues(wire.KindTelemetry)), 1},
		{"rejected tenant_mismatch", value(t, m.rejected.WithLabelValues(wire.KindEvents, string(ReasonTenantMismatch))), 1},
		{"partial calls", value(t, m.puts.WithLabelValues("partial")), 1},
		{"retried", value(t, m.retried.WithLabelValues("ProvisionedThroughputExceededException")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v; want %v", c.name, c.got, c.want)
		}
	}
}

func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return 0
}
