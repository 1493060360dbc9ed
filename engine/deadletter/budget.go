package deadletter

import (
	"sync"
	"time"
)

// Verdict is what a Budget allows one rejection.
type Verdict int

const (
	// Write: under the budget, the rejection gets its own letter.
	Write Verdict = iota
	// Summary: the first past the budget writes the window's one summary
	// letter.
	Summary
	// Counted: past that, the rejection is only counted.
	Counted
)

// Budget bounds the dead letters one source may write: Per letters per
// key in fixed windows of Window, then one summary letter, then none until
// the window ends. It holds at most MaxKeys keys: when full, expired
// windows go first, then a new key shares one overflow window with every
// other newcomer, so no flood of fresh keys grows it. Safe for concurrent
// use.
type Budget struct {
	per    int
	window time.Duration
	max    int

	mu   sync.Mutex
	keys map[string]*budgetWindow
}

type budgetWindow struct {
	start time.Time
	n     int
}

// NewBudget returns a budget of per letters per key and window, over at
// most maxKeys keys.
func NewBudget(per int, window time.Duration, maxKeys int) *Budget {
	return &Budget{per: per, window: window, max: maxKeys, keys: map[string]*budgetWindow{}}
}

// Admit counts one rejection for key at now and says what it may write,
// with the start of its window (a summary letter names it).
func (b *Budget) Admit(key string, now time.Time) (Verdict, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.keys[key]
	if !ok && len(b.keys) >= b.max {
		for k, old := range b.keys {
			if now.Sub(old.start) >= b.window {
				delete(b.keys, k)
			}
		}
		if len(b.keys) >= b.max {
			key = "overflow"
			w, ok = b.keys[key]
		}
	}
	if !ok || now.Sub(w.start) >= b.window || now.Before(w.start) {
		w = &budgetWindow{start: now}
		b.keys[key] = w
	}
	w.n++
	switch {
	case w.n <= b.per:
		return Write, w.start
	case w.n == b.per+1:
		return Summary, w.start
	}
	return Counted, w.start
}
