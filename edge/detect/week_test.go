package detect

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// truth is one ground-truth event of the test world.
type truth struct {
	typ   string
	start time.Time
	end   time.Time
	grams float64
	tag   string
}

type input struct {
	at    time.Time
	grams float64
	tag   string // a tag read when non-empty
}

// world generates a week of one bowl shared by three pets: meals with bites,
// head pushes and pauses, refills by a person, pets leaning on the bowl
// without eating, single-sample spikes and load-cell noise. Idle stretches
// between episodes are shortened to 40 s of samples (the clock jumps), which
// keeps the test fast without changing what the detector sees around an
// episode.
func world(seed uint64, rateHz int) ([]input, []truth) {
	rng := rand.New(rand.NewPCG(seed, 7))
	pets := []struct {
		tag        string
		minG, maxG float64
	}{{"985000000000001", 15, 40}, {"985000000000002", 30, 70}, {"985000000000003", 8, 20}}
	dt := time.Second / time.Duration(rateHz)
	now := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	level := 250.0
	var in []input
	var gt []truth
	emit := func(extra float64) {
		g := level + extra + rng.NormFloat64()*0.8
		if rng.IntN(rateHz*60) == 0 {
			g += (rng.Float64()*2 - 1) * 300 // spike
		}
		in = append(in, input{at: now, grams: g})
		now = now.Add(dt)
	}
	idle := func(d time.Duration) {
		for t := time.Duration(0); t < d; t += dt {
			emit(0)
		}
	}
	idle(20 * time.Second)
	end := now.Add(7 * 24 * time.Hour)
	for now.Before(end) {
		now = now.Add(time.Duration(20+rng.IntN(160)) * time.Minute) // idle gap
		idle(20 * time.Second)
		switch r := rng.Float64(); {
		case level < 90 || r < 0.12: // refill
			add := 120 + rng.Float64()*150
			start := now
			pour := time.Duration(3+rng.IntN(4)) * time.Second
			steps := int(pour / dt)
			for i := 0; i < steps; i++ {
				level += add / float64(steps)
				emit(rng.Float64() * 40) // hand on the bowl
			}
			gt = append(gt, truth{typ: TypeRefilled, start: start, end: now, grams: add})
		case r < 0.22: // a pet leans on the bowl, does not eat
			p := pets[rng.IntN(len(pets))]
			push := 200 + rng.Float64()*600
			withTag := rng.IntN(2) == 0
			for t := time.Duration(0); t < time.Duration(2+rng.IntN(5))*time.Second; t += dt {
				if withTag && t%time.Second == 0 {
					in = append(in, input{at: now, tag: p.tag})
				}
				emit(push + rng.NormFloat64()*20)
			}
		default: // a meal
			p := pets[rng.IntN(len(pets))]
			want := math.Min(p.minG+rng.Float64()*(p.maxG-p.minG), level-5)
			if want < 3 {
				continue
			}
			start := now
			eaten := 0.0
			nextTag := now
			for eaten < want {
				if !now.Before(nextTag) {
					if rng.IntN(10) > 0 { // RFID misses a read now and then
						in = append(in, input{at: now, tag: p.tag})
					}
					nextTag = now.Add(time.Duration(1000+rng.IntN(2000)) * time.Millisecond)
				}
				if rng.IntN(rateHz*8) == 0 { // a pause, head up
					for t := time.Duration(0); t < time.Duration(1+rng.IntN(3))*time.Second; t += dt {
						emit(0)
					}
					continue
				}
				if rng.IntN(rateHz/2) == 0 { // a bite
					b := math.Min(0.5+rng.Float64()*1.5, want-eaten)
					level -= b
					eaten += b
				}
				emit(5 + rng.Float64()*25) // head pushing while eating
			}
			gt = append(gt, truth{typ: TypeMealFinished, start: start, end: now, grams: eaten, tag: p.tag})
		}
		idle(20 * time.Second)
	}
	return in, gt
}

func run(t testing.TB, in []input) []Event {
	d, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var out []Event
	for i, x := range in {
		ref := Ref{Seq: uint32(i / 10), Index: uint16(i % 10)}
		if x.tag != "" {
			out = append(out, d.Tag(ref, x.at, x.tag)...)
			continue
		}
		out = append(out, d.Weight(ref, x.at, x.grams)...)
	}
	return out
}

type score struct {
	tp, fp, fn int
	errs       []float64
}

func (s score) precision() float64 { return float64(s.tp) / float64(max(1, s.tp+s.fp)) }
func (s score) recall() float64    { return float64(s.tp) / float64(max(1, s.tp+s.fn)) }
func (s score) medianErr() float64 {
	if len(s.errs) == 0 {
		return 0
	}
	e := append([]float64(nil), s.errs...)
	sort.Float64s(e)
	return e[len(e)/2]
}

// match pairs detected and true events of typ whose times overlap (with a
// margin for the detector's settle time).
func match(typ string, det []Event, gt []truth) score {
	var s score
	used := map[int]bool{}
	for _, e := range det {
		if e.Type() != typ {
			continue
		}
		var start time.Time
		var grams float64
		var tag string
		switch d := e.Data.(type) {
		case wire.MealFinished:
			start, grams, tag = d.StartedAt, d.GramsEaten, d.PetTag
		case wire.Refilled:
			start, grams = e.At.Add(-10*time.Second), d.GramsAdded
		}
		found := -1
		for i, g := range gt {
			if used[i] || g.typ != typ || g.tag != tag {
				continue
			}
			if !start.After(g.end.Add(15*time.Second)) && !e.At.Before(g.start) {
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
		s.errs = append(s.errs, math.Abs(grams-gt[found].grams)/gt[found].grams)
	}
	for i, g := range gt {
		if g.typ == typ && !used[i] {
			s.fn++
		}
	}
	return s
}

// TestDetectionQualityOnASimulatedWeek scores meal and refill detection on
// a week of three pets: precision and recall at least 0.95, median grams
// error at most 5%.
func TestDetectionQualityOnASimulatedWeek(t *testing.T) {
	var total [2]score
	types := []string{TypeMealFinished, TypeRefilled}
	for seed := uint64(1); seed <= 2; seed++ {
		in, gt := world(seed, 25)
		det := run(t, in)
		for i, typ := range types {
			s := match(typ, det, gt)
			total[i].tp += s.tp
			total[i].fp += s.fp
			total[i].fn += s.fn
			total[i].errs = append(total[i].errs, s.errs...)
		}
	}
	for i, typ := range types {
		s := total[i]
		t.Logf("%s: tp %d fp %d fn %d precision %.3f recall %.3f median grams error %.2f%%", typ, s.tp, s.fp, s.fn, s.precision(), s.recall(), 100*s.medianErr())
		if s.precision() < 0.95 || s.recall() < 0.95 {
			t.Errorf("%s precision %.3f recall %.3f; want both >= 0.95", typ, s.precision(), s.recall())
		}
		if s.medianErr() > 0.05 {
			t.Errorf("%s median grams error %.2f%%; want <= 5%%", typ, 100*s.medianErr())
		}
	}
}
