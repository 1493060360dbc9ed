package sim

import (
	"context"
	"sync"
	"time"
)

// Fleet is a set of simulated bowls sharing a config and a ground-truth
// sink.
type Fleet struct {
	cfg   Config
	bowls []*Bowl
	mu    sync.Mutex
}

// NewFleet builds cfg.Bowls bowls, deterministic from cfg.Seed.
func NewFleet(cfg Config) (*Fleet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg.withDefaults()}
	truth := func(t Truth) {
		if f.cfg.OnTruth != nil {
			f.mu.Lock()
			f.cfg.OnTruth(t)
			f.mu.Unlock()
		}
	}
	for i := 0; i < f.cfg.Bowls; i++ {
		b, err := newBowl(f.cfg, i, truth)
		if err != nil {
			return nil, err
		}
		f.bowls = append(f.bowls, b)
	}
	return f, nil
}

// Bowls returns the bowls, in device-id order.
func (f *Fleet) Bowls() []*Bowl { return f.bowls }

// Simulate runs every bowl's physics for the simulated duration d, each in
// its own goroutine, and returns the first error.
func (f *Fleet) Simulate(ctx context.Context, d time.Duration) error {
	errs := make(chan error, len(f.bowls))
	for _, b := range f.bowls {
		go func() { errs <- b.Simulate(ctx, d) }()
	}
	var first error
	for range f.bowls {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
