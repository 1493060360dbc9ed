package detect_test

import (
	"context"
	"math"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/detect"
	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"

	"github.com/bowline-iot/bowline/edge/wire"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// simWeek runs the firmware-bridge simulator (one bowl, three pets, a week,
// faster than real time) through a real bridge on an in-memory link, feeds
// the detector with the device-clock time of every reading, and returns the
// detected events and the simulator's ground truth.
func simWeek(t *testing.T, seed uint64, rateHz int, days int) ([]detect.Event, []sim.Truth) {
	t.Helper()
	var mu sync.Mutex
	var truth []sim.Truth
	fleet, err := sim.NewFleet(sim.Config{
		Bowls: 1, Seed: seed, PetsPerBowl: 3, SampleRateHz: rateHz, RingSize: 1024,
		OnTruth: func(tr sim.Truth) { mu.Lock(); truth = append(truth, tr); mu.Unlock() },
		Logger:  discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	det, err := detect.New(detect.Config{FoodLowG: 60, EmptyG: 5})
	if err != nil {
		t.Fatal(err)
	}
	var events []detect.Event
	// The device clock, not the gateway's: the simulation runs faster than
	// real time, so the bridge's wall-clock mapping would squeeze it.
	clock := func(r bridge.Record) time.Time { return sim.DefaultStart.Add(r.Uptime) }
	sink := bridge.SinkFunc(func(_ context.Context, batch []bridge.Record) error {
		for _, r := range batch {
			switch b := r.Body.(type) {
			case frame.WeightBatch:
				step := time.Second / time.Duration(max(1, int(b.RateHz)))
				for i, mg := range b.Milligrams {
					events = append(events, det.Weight(detect.Ref{Seq: r.Seq, Index: uint16(i)}, clock(r).Add(time.Duration(i)*step), float64(mg)/1000)...)
				}
			case frame.TagSeen:
				events = append(events, det.Tag(detect.Ref{Seq: r.Seq}, clock(r), b.Tag)...)
			}
		}
		return nil
	})
	br, err := bridge.New(bridge.Config{Sink: sink, Logger: discard(), MaxBatch: 256})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gw, dev := net.Pipe()
	var wg sync.WaitGroup
	wg.Go(func() { _ = br.Run(ctx, gw) })
	wg.Go(func() { _ = fleet.Bowls()[0].MCU().Run(ctx, dev) })
	if err := fleet.Simulate(ctx, time.Duration(days)*24*time.Hour); err != nil {
		t.Fatalf("simulate: %v", err)
	}
	// Wait until the bridge has delivered everything the MCU numbered.
	m := fleet.Bowls()[0].MCU()
	deadline := time.Now().Add(60 * time.Second)
	for m.Stats().RingLen > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("ring never drained: %+v", m.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return events, truth
}

type tally struct {
	tp, fp, fn int
	errs       []float64
}

func (s tally) precision() float64 { return float64(s.tp) / float64(max(1, s.tp+s.fp)) }
func (s tally) recall() float64    { return float64(s.tp) / float64(max(1, s.tp+s.fn)) }
func (s tally) median() float64 {
	if len(s.errs) == 0 {
		return 0
	}
	e := append([]float64(nil), s.errs...)
	sort.Float64s(e)
	return e[len(e)/2]
}

// score matches detected events of typ to truths of kind: same pet (meals),
// the detected interval within the true one widened by a minute.
func score(events []detect.Event, truth []sim.Truth, typ, kind string) tally {
	var s tally
	used := map[int]bool{}
	for _, e := range events {
		if e.Type() != typ {
			continue
		}
		start, grams, tag := e.At, 0.0, ""
		switch d := e.Data.(type) {
		case wire.MealFinished:
			start, grams, tag = d.StartedAt, d.GramsEaten, d.PetTag
		case wire.Refilled:
			grams = d.GramsAdded
		}
		found := -1
		for i, tr := range truth {
			if used[i] || tr.Kind != kind || tr.PetTag != tag || !scored(tr) {
				continue
			}
			lo := sim.DefaultStart.Add(time.Duration(tr.StartUptimeMS)*time.Millisecond - time.Minute)
			hi := sim.DefaultStart.Add(time.Duration(tr.EndUptimeMS)*time.Millisecond + time.Minute)
			if !start.Before(lo) && !e.At.After(hi) {
				found = i
				break
			}
		}
		if found < 0 {
			s.fp++
			continue
		}
		used[found] = true
		s.tp++
		s.errs = append(s.errs, math.Abs(grams-truth[found].Grams)/truth[found].Grams)
	}
	for i, tr := range truth {
		if tr.Kind == kind && !used[i] && scored(tr) {
			s.fn++
		}
	}
	return s
}

// scored leaves out the simulator's zero-gram "meals": a pet visiting an
// empty bowl eats nothing, and a load cell cannot see a meal of nothing
// (the detector reports no bowl.meal_finished for it, by design).
func scored(tr sim.Truth) bool { return tr.Kind != sim.KindMeal || tr.Grams >= 1 }

// TestDetectionQualityAgainstSimulatorTruth: on a simulated week of three
// pets (noise, drift, glitches, pets pushing on the bowl while eating),
// meal and refill detection reach precision and recall of at least 0.95
// and the median grams error is at most 5%.
func TestDetectionQualityAgainstSimulatorTruth(t *testing.T) {
	testkit.Long(t, "a simulated week is skipped in -short mode")
	days := 7
	if raceEnabled {
		days = 1
	}
	events, truth := simWeek(t, simSeed, 10, days)
	for _, c := range []struct{ typ, kind string }{{detect.TypeMealFinished, sim.KindMeal}, {detect.TypeRefilled, sim.KindRefill}} {
		s := score(events, truth, c.typ, c.kind)
		t.Logf("%s: tp %d fp %d fn %d precision %.3f recall %.3f median grams error %.2f%%", c.typ, s.tp, s.fp, s.fn, s.precision(), s.recall(), 100*s.median())
		if s.precision() < 0.95 || s.recall() < 0.95 {
			t.Errorf("%s precision %.3f recall %.3f; want both >= 0.95", c.typ, s.precision(), s.recall())
		}
		if s.median() > 0.05 {
			t.Errorf("%s median grams error %.2f%%; want <= 5%%", c.typ, 100*s.median())
		}
	}
}

var simSeed uint64 = 42
