package ingest

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/bowline-iot/bowline/edge/wire"
)

func TestMetricsCountThroughObservers(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	var obs Observer = Observers(NopObserver{}, m)
	obs.Acked(Ack{Kind: wire.KindEvents, Tenant: "t1", Thing: "b1", Seq: 5, SinceReceipt: 3 * time.Millisecond, ClockFix: ClockAhead, ClockSkew: 10 * time.Minute})
	obs.Rejected(wire.KindEvents, ReasonTenantMismatch)
	obs.Emitted("bowl.empty")
	obs.GapRaised(LaneEvents)
	obs.Held("emit", "throttled")
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"acked events", value(t, m.acked.WithLabelValues(wire.KindEvents)), 1},
		{"clock corrected", value(t, m.clockFixes.WithLabelValues(wire.KindEvents, ClockAhead)), 1},
		{"rejected tenant_mismatch", value(t, m.rejected.WithLabelValues(wire.KindEvents, string(ReasonTenantMismatch))), 1},
		{"emitted", value(t, m.emitted.WithLabelValues("bowl.empty")), 1},
		{"gaps", value(t, m.gaps.WithLabelValues(LaneEvents)), 1},
		{"held", value(t, m.failures.held.WithLabelValues("emit", "throttled")), 1},
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
