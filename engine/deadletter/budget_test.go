package deadletter

import (
	"testing"
	"time"
)

// A key writes Per letters a window, then one summary, then nothing;
// the next window starts over; past MaxKeys newcomers share one window.
func TestBudget(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	b := NewBudget(2, time.Minute, 2)
	var got []Verdict
	for range 4 {
		v, _ := b.Admit("gw-1", t0)
		got = append(got, v)
	}
	if want := []Verdict{Write, Write, Summary, Counted}; !equal(got, want) {
		t.Errorf("one key in one window: %v; want %v", got, want)
	}
	if v, start := b.Admit("gw-1", t0.Add(time.Minute)); v != Write || !start.Equal(t0.Add(time.Minute)) {
		t.Errorf("next window: %v from %v; want Write from its start", v, start)
	}
	// gw-2's window has expired by the time new-1 comes (it makes room);
	// new-2.. find the bound full and share the overflow window.
	b.Admit("gw-2", t0)
	for i, k := range []string{"new-1", "new-2", "new-3", "new-4"} {
		v, _ := b.Admit(k, t0.Add(time.Minute))
		if want := []Verdict{Write, Write, Write, Summary}[i]; v != want {
			t.Errorf("newcomer %s past the key bound: %v; want %v (one shared overflow window)", k, v, want)
		}
	}
}

func equal(a, b []Verdict) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
