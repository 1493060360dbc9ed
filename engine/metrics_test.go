package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/engine"
)

func TestFailureReason(t *testing.T) {
	for err, want := range map[error]string{
		&engine.DuplicateError{Key: "k", EventID: "e"}:                                     "duplicate",
		fmt.Errorf("emit: %w", &engine.ConditionFailedError{Write: 1}):                     "condition_failed",
		fmt.Errorf("not committed: %w: %w", engine.ErrThrottled, context.DeadlineExceeded): "throttled",
		fmt.Errorf("not committed: %w", context.DeadlineExceeded):                          "deadline",
		engine.ErrPayloadTooLarge:                                                          "invalid",
		errors.New("boom"):                                                                 "other",
	} {
		if got := engine.FailureReason(err); got != want {
			t.Errorf("FailureReason(%v) = %q; want %q", err, got, want)
		}
	}
}

func TestMetricsObserveEmits(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := engine.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, testCatalog(), func(c *engine.Config) { c.Observer = m })
	ctx := ctxFor(t, newTenant(t))
	for i := 0; i < 3; i++ {
		if _, err := f.engine.Emit(ctx, "bowl.empty", map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = f.engine.Emit(ctx, "bowl.nope", map[string]any{})
	got := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		for _, m := range fam.GetMetric() {
			key := fam.GetName()
			for _, l := range m.GetLabel() {
				key += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			switch {
			case m.Counter != nil:
				got[key] = m.Counter.GetValue()
			case m.Histogram != nil:
				got[key] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	for key, want := range map[string]float64{
		"bowline_engine_events_committed_total":              3,
		"bowline_engine_emit_failures_total{reason=invalid}": 1,
		"bowline_engine_group_events":                        3,
	} {
		if got[key] != want {
			t.Errorf("metric %s = %v; want %v", key, got[key], want)
		}
	}
}
