package sim

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// runCaptured simulates d for every bowl of cfg with the MCU bypassed and
// returns a digest of every reading plus the ground truth.
func runCaptured(t *testing.T, cfg Config, d time.Duration) (digest string, truth []Truth, weights map[string][]frame.Frame) {
	t.Helper()
	cfg.Speed = 0
	cfg.OnTruth = func(tr Truth) { truth = append(truth, tr) }
	f, err := NewFleet(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	weights = map[string][]frame.Frame{}
	for _, b := range f.Bowls() { // sequentially, so the truth order is stable
		b.emit = func(_ context.Context, up uint32, body frame.Body) error {
			j, _ := json.Marshal(frame.Frame{UptimeMillis: up, Body: body})
			fmt.Fprintf(h, "%s %s\n", b.ID(), j)
			if body.Type() == frame.TypeWeight {
				weights[b.ID()] = append(weights[b.ID()], frame.Frame{UptimeMillis: up, Body: body})
			}
			return nil
		}
		if err := b.Simulate(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil)), truth, weights
}

func TestSimulationIsDeterministic(t *testing.T) {
	cfg := Config{Bowls: 2, Seed: 42}
	d1, t1, _ := runCaptured(t, cfg, time.Hour)
	d2, t2, _ := runCaptured(t, cfg, time.Hour)
	if d1 != d2 || len(t1) != len(t2) {
		t.Fatalf("same seed: digests %s / %s, %d / %d truth lines; want identical", d1, d2, len(t1), len(t2))
	}
	d3, _, _ := runCaptured(t, Config{Bowls: 2, Seed: 43}, time.Hour)
	if d3 == d1 {
		t.Fatalf("seeds 42 and 43 gave the same readings")
	}
}

// TestTwoDaysOfPhysics checks the ground truth against itself and against
// the weight signal over two simulated days with the evening refill
// always forgotten: meals by every pet, refills, low and empty moments,
// glitches; the food ledger adds up; the signal at rest matches the truth.
func TestTwoDaysOfPhysics(t *testing.T) {
	cfg := Config{Seed: 7, SampleRateHz: 10, PetsPerBowl: 3, SkipRefillChance: 1, GlitchesPerHour: 2, DriftGPerHour: 0.1,
		Faults: []ScheduledFault{{Bowl: -1, After: time.Hour, Code: frame.FaultTagReader, Detail: "rfid timeout"}}}
	_, truth, weights := runCaptured(t, cfg, 48*time.Hour)
	kinds := map[string]int{}
	tags := map[string]bool{}
	var level float64 = -1
	for i, tr := range truth {
		kinds[tr.Kind]++
		if tr.Device != "bowl-000" || tr.Start.Before(DefaultStart) {
			t.Fatalf("truth %d = %+v; want device bowl-000 after boot", i, tr)
		}
		switch tr.Kind {
		case KindMeal, KindRefill:
			if !tr.End.After(tr.Start) || tr.Grams <= 0 || tr.EndUptimeMS-tr.StartUptimeMS != tr.End.Sub(tr.Start).Milliseconds() {
				t.Fatalf("truth %d = %+v; want start < end, grams > 0, uptimes matching times", i, tr)
			}
			if level >= 0 {
				want := level - tr.Grams
				if tr.Kind == KindRefill {
					want = level + tr.Grams
				}
				if math.Abs(tr.LevelG-want) > 0.15 {
					t.Fatalf("truth %d (%s %.1f g): level %.1f; want %.1f from the previous level %.1f", i, tr.Kind, tr.Grams, tr.LevelG, want, level)
				}
			}
			level = tr.LevelG
			if tr.Kind == KindMeal {
				tags[tr.PetTag] = true
				if d := tr.End.Sub(tr.Start); d < 10*time.Second || d > 20*time.Minute {
					t.Errorf("meal %d lasted %v; want a realistic 10s..20m", i, d)
				}
			}
		case KindFoodLow, KindEmpty:
			if tr.LevelG > tr.ThresholdG { // level_g is rounded to 0.1 g
				t.Errorf("truth %d = %+v; want level at or below the threshold", i, tr)
			}
		}
	}
	if kinds[KindMeal] < 12 || kinds[KindRefill] != 2 || kinds[KindFoodLow] < 1 || kinds[KindEmpty] < 1 || kinds[KindGlitch] < 10 || kinds[KindFault] != 1 || len(tags) != 3 {
		t.Fatalf("two days gave %v and %d pet tags; want >=12 meals, 2 refills, low, empty, >=10 glitches, 1 fault, 3 tags", kinds, len(tags))
	}
	// At rest (after a meal or refill ended plus the pet's leave), the
	// median sample equals the truth level within noise (1 g), the drift
	// so far and the temperature coefficient (±2 C).
	ws := weights["bowl-000"]
	for _, tr := range truth {
		if tr.Kind != KindMeal && tr.Kind != KindRefill {
			continue
		}
		sec := int(tr.EndUptimeMS/1000) + 5
		if sec >= len(ws) {
			continue
		}
		s := append([]int32(nil), ws[sec].Body.(frame.WeightBatch).Milligrams...)
		med := median(s) / 1000
		tol := 1 + cfg.DriftGPerHour*tr.End.Sub(DefaultStart).Hours() + 2*tempCoeffGPerC
		if math.Abs(med-tr.LevelG) > tol {
			t.Errorf("5 s after %s at %v: median reading %.1f g; want %.1f ± %.1f", tr.Kind, tr.End, med, tr.LevelG, tol)
		}
	}
}

func median(s []int32) float64 {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return float64(s[len(s)/2])
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Bowls: -1}, {Speed: -1}, {SampleRateHz: 51}, {PetsPerBowl: 5},
		{CapacityG: 50, LowG: 60}, {SkipRefillChance: 2}, {Faults: []ScheduledFault{{Bowl: 3}}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil; want an error", c)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("Validate(zero) = %v; want nil (defaults)", err)
	}
}

// FirstMealAfter puts one meal of each bowl's first pet right after boot,
// staggered by bowl, even at night when no meal is planned.
func TestFirstMealAfterBoot(t *testing.T) {
	night := time.Date(2026, 1, 5, 1, 0, 0, 0, time.UTC)
	cfg := Config{Bowls: 3, Seed: 7, Start: night, SampleRateHz: 2, FirstMealAfter: 2 * time.Minute}
	_, truth, _ := runCaptured(t, cfg, 30*time.Minute)
	meals := map[string]Truth{}
	for _, tr := range truth {
		if _, seen := meals[tr.Device]; tr.Kind == KindMeal && !seen {
			meals[tr.Device] = tr
		}
	}
	for i := range cfg.Bowls {
		dev := fmt.Sprintf("bowl-%03d", i)
		m, ok := meals[dev]
		want := night.Add(time.Duration(i+1) * cfg.FirstMealAfter)
		if !ok || m.Start.Before(want) || m.Start.After(want.Add(time.Second)) {
			t.Errorf("%s first meal %+v; want one starting at %s", dev, m, want)
		}
	}
	_, quiet, _ := runCaptured(t, Config{Bowls: 3, Seed: 7, Start: night, SampleRateHz: 2}, 30*time.Minute)
	for _, tr := range quiet {
		if tr.Kind == KindMeal {
			t.Errorf("without FirstMealAfter, a meal at %s at night; want none", tr.Start)
		}
	}
}
