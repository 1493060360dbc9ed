package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

func TestQuantise(t *testing.T) {
	b := &Bowl{cfg: Config{LoadCellG: 5000, ResolutionMg: 100}}
	for _, c := range []struct {
		g    float64
		want int32
	}{
		{412.449, 412400}, {412.45, 412500}, {-0.04, 0}, {-0.06, -100}, {6000, 5_000_000}, {-7000, -5_000_000},
	} {
		if got := b.quantise(c.g); got != c.want {
			t.Errorf("quantise(%v g) = %d mg; want %d", c.g, got, c.want)
		}
	}
	b.cfg.ResolutionMg = 1
	if got := b.quantise(412.4567); got != 412457 {
		t.Errorf("quantise(412.4567 g) at 1 mg = %d; want 412457", got)
	}
}

// TestLoadCellAtRest checks the model's defaults on a bowl nobody touches
// (a night, before the first meal): every reading a multiple of 0.1 g, and
// the spread within one second (drift and temperature are constant there)
// that of 0.1 g rms white noise rounded to 0.1 g: sqrt(0.1² + 0.1²/12)
// = 0.104 g.
func TestLoadCellAtRest(t *testing.T) {
	night := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	_, _, weights := runCaptured(t, Config{Seed: 3, Start: night}, 30*time.Minute)
	var sds []float64
	for _, f := range weights["bowl-000"] {
		mg := f.Body.(frame.WeightBatch).Milligrams
		var sum, sq float64
		for _, v := range mg {
			if v%100 != 0 {
				t.Fatalf("reading %d mg; want a multiple of the 100 mg resolution", v)
			}
			sum += float64(v)
		}
		mean := sum / float64(len(mg))
		for _, v := range mg {
			sq += (float64(v) - mean) * (float64(v) - mean)
		}
		sds = append(sds, math.Sqrt(sq/float64(len(mg)-1))/1000)
	}
	slices.Sort(sds)
	if med := sds[len(sds)/2]; med < 0.09 || med > 0.12 {
		t.Errorf("median spread within a second at rest %.3f g; want 0.104 ± 0.015", med)
	}
}
