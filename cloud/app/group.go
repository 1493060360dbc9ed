package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// Group supervises a process's long-running parts: each runs under the
// group's context until Close. A part that fails is logged and recorded
// (Err, Failed); the others keep running, and the caller decides whether to
// stop (a main usually does, `bowline dev` keeps going). Cleanups
// registered with OnClose run after every part has returned, in reverse
// order, so the engine closes after the last emitter stops.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger
	wg     sync.WaitGroup

	mu       sync.Mutex
	errs     []error
	cleanups []func() error
	done     chan struct{}
	once     sync.Once
}

// NewGroup returns a group whose parts run until parent ends or Close.
// log (default slog.Default()) reports parts that fail.
func NewGroup(parent context.Context, log *slog.Logger) *Group {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(parent)
	return &Group{ctx: ctx, cancel: cancel, log: log, done: make(chan struct{})}
}

// Context is the context the parts run under.
func (g *Group) Context() context.Context { return g.ctx }

// Go runs f as the part named name. The returned channel is closed when f
// returns.
func (g *Group) Go(name string, f func(ctx context.Context) error) <-chan struct{} {
	stopped := make(chan struct{})
	g.wg.Go(func() {
		defer close(stopped)
		if err := f(g.ctx); err != nil && !errors.Is(err, context.Canceled) {
			g.mu.Lock()
			g.errs = append(g.errs, fmt.Errorf("%s: %w", name, err))
			g.mu.Unlock()
			g.log.Error("part stopped", "part", name, "err", err)
			g.once.Do(func() { close(g.done) })
		}
	})
	return stopped
}

// OnClose registers a cleanup to run once every part has returned.
func (g *Group) OnClose(f func() error) {
	g.mu.Lock()
	g.cleanups = append(g.cleanups, f)
	g.mu.Unlock()
}

// Failed is closed when a part has failed.
func (g *Group) Failed() <-chan struct{} { return g.done }

// Err joins the failures so far; nil when no part has failed.
func (g *Group) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.errs...)
}

// Wait waits for every part to return (parts return when the context ends).
func (g *Group) Wait() { g.wg.Wait() }

// Close stops every part, waits for them, runs the cleanups and returns
// every failure. It is safe to call more than once.
func (g *Group) Close() error {
	g.cancel()
	g.wg.Wait()
	g.mu.Lock()
	errs := g.errs
	g.errs = nil
	cleanups := g.cleanups
	g.cleanups = nil
	g.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		if err := cleanups[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
