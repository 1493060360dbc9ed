package anchor_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/engine/anchor"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// A completed Round is told to Config.Observer; Metrics counts it.
func TestRoundIsObserved(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	m, err := anchor.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Unix(1_700_000_000, 0)
	l, err := anchor.New(anchor.Config{Client: f.ddb, Table: f.names.AnchorsTable(), Chains: f.chains,
		Logger: testkit.Logger(t, 0), Now: func() time.Time { return end }, Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Round(f.ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			switch {
			case mt.GetCounter() != nil:
				got[mf.GetName()] = mt.GetCounter().GetValue()
			case mt.GetGauge() != nil:
				got[mf.GetName()] = mt.GetGauge().GetValue()
			}
		}
	}
	if got["bowline_anchor_rounds_total"] != 1 || got["bowline_anchor_last_round_timestamp_seconds"] != float64(end.Unix()) {
		t.Errorf("rounds %v, last round %v; want 1 and %d (the Ledger's Now)", got["bowline_anchor_rounds_total"], got["bowline_anchor_last_round_timestamp_seconds"], end.Unix())
	}
}

// Validate checks a Config with every default left zero without filling
// any of them (New does, in setDefaults).
func TestValidateLeavesConfigAlone(t *testing.T) {
	f := newFixture(t)
	if err := testkit.ValidateKeeps(t, anchor.Config{Client: f.ddb, Table: f.names.AnchorsTable(), Chains: f.chains}); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
}
