package detect

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

var t0 = time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)

// feed drives d with grams for dur at 50 Hz from *now and returns events.
func feed(d *Detector, now *time.Time, seq *uint32, grams func(i int) float64, dur time.Duration) []Event {
	var out []Event
	for i := 0; time.Duration(i)*20*time.Millisecond < dur; i++ {
		out = append(out, d.Weight(Ref{Seq: *seq, Index: uint16(i % 10)}, *now, grams(i))...)
		if i%10 == 9 {
			*seq++
		}
		*now = now.Add(20 * time.Millisecond)
	}
	*seq++
	return out
}

func newDetector(t *testing.T) *Detector {
	t.Helper()
	d, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSpikesAndLeaningAreNotEvents(t *testing.T) {
	d := newDetector(t)
	now, seq := t0, uint32(0)
	steady := func(int) float64 { return 200 }
	var got []Event
	got = append(got, feed(d, &now, &seq, steady, 10*time.Second)...)
	// Single-sample spikes of +-400 g every second.
	got = append(got, feed(d, &now, &seq, func(i int) float64 {
		if i%50 == 0 {
			return 600
		}
		if i%50 == 25 {
			return -200
		}
		return 200
	}, 20*time.Second)...)
	// A pet leans with 700 g for 4 s, then leaves.
	got = append(got, feed(d, &now, &seq, func(int) float64 { return 900 }, 4*time.Second)...)
	got = append(got, feed(d, &now, &seq, steady, 20*time.Second)...)
	if len(got) != 0 {
		t.Fatalf("events = %+v; want none", got)
	}
	if lvl, ok := d.Level(); !ok || lvl != 200 {
		t.Fatalf("level = %v, %v; want 200", lvl, ok)
	}
}

func TestMealRefillFoodLowEmpty(t *testing.T) {
	d := newDetector(t)
	now, seq := t0, uint32(0)
	level := 60.0
	var got []Event
	got = append(got, feed(d, &now, &seq, func(int) float64 { return level }, 10*time.Second)...)
	got = append(got, d.Tag(Ref{Seq: seq}, now, "pet-a")...)
	seq++
	// Eat 30 g over 10 s with head pushes, then leave.
	got = append(got, feed(d, &now, &seq, func(i int) float64 { level = 60 - float64(i)*30/500; return level + 10 }, 10*time.Second)...)
	level = 30
	got = append(got, feed(d, &now, &seq, func(int) float64 { return level }, 10*time.Second)...)
	// Eat the rest.
	got = append(got, feed(d, &now, &seq, func(i int) float64 { return 30 - float64(i)*28/500 + 10 }, 10*time.Second)...)
	got = append(got, feed(d, &now, &seq, func(int) float64 { return 2 }, 10*time.Second)...)
	// Refill to 300 g.
	got = append(got, feed(d, &now, &seq, func(i int) float64 { return 2 + float64(i)*298/250 }, 5*time.Second)...)
	got = append(got, feed(d, &now, &seq, func(int) float64 { return 300 }, 10*time.Second)...)

	var types []string
	for _, e := range got {
		types = append(types, e.Type())
	}
	want := []string{TypeMealFinished, TypeFoodLow, TypeMealFinished, TypeEmpty, TypeRefilled}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("event types = %v; want %v", types, want)
	}
	m := got[0].Data.(wire.MealFinished)
	if m.PetTag != "pet-a" || m.GramsEaten < 29 || m.GramsEaten > 31 {
		t.Fatalf("first meal = %+v; want pet-a, about 30 g", m)
	}
	if r := got[4].Data.(wire.Refilled); r.GramsAdded < 296 || r.GramsAdded > 300 || r.LevelG != 300 {
		t.Fatalf("refill = %+v; want about 298 g to 300 g", r)
	}
	ids := map[string]bool{}
	for _, e := range got {
		if ids[e.ID] {
			t.Fatalf("duplicate id %q", e.ID)
		}
		ids[e.ID] = true
	}
}

// TestReplayAfterRestoreGivesSameIDs cuts a week's input at many points,
// carries the state over through Snapshot/Restore as the agent does across
// a crash, and expects exactly the events of an uninterrupted run.
func TestReplayAfterRestoreGivesSameIDs(t *testing.T) {
	in, _ := world(9, 25)
	want := run(t, in)
	var got []Event
	d := newDetector(t)
	for i, x := range in {
		if i%7919 == 0 {
			snap, err := d.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			d = newDetector(t)
			if err := d.Restore(snap); err != nil {
				t.Fatal(err)
			}
		}
		ref := Ref{Seq: uint32(i / 10), Index: uint16(i % 10)}
		if x.tag != "" {
			got = append(got, d.Tag(ref, x.at, x.tag)...)
		} else {
			got = append(got, d.Weight(ref, x.at, x.grams)...)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d events after restores; want %d", len(got), len(want))
	}
	for i := range want {
		a, _ := json.Marshal(got[i].Data)
		b, _ := json.Marshal(want[i].Data)
		if got[i].ID != want[i].ID || string(a) != string(b) || !got[i].At.Equal(want[i].At) {
			t.Fatalf("event %d = %s %s; want %s %s", i, got[i].ID, a, want[i].ID, b)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{MedianWindow: 4}, {EmptyG: 50, FoodLowG: 10}, {Settle: -1}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) = nil error; want an error", c)
		}
	}
}
