package durable

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// warnCount counts log records at warning level or above.
type warnCount struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnCount) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnCount) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.mu.Lock()
		w.msgs = append(w.msgs, r.Message)
		w.mu.Unlock()
	}
	return nil
}
func (w *warnCount) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCount) WithGroup(string) slog.Handler      { return w }

func (w *warnCount) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

// TestWritesCutByTheStopAreNotWarnings: the last flush of a stopping
// process (its context ended) fails every write; that is no warning. The
// same failures with the context alive still warn.
func TestWritesCutByTheStopAreNotWarnings(t *testing.T) {
	for _, tt := range []struct {
		name     string
		stopped  bool
		err      error
		wantWarn bool
	}{
		{"stopping", true, context.Canceled, false},
		{"running", false, errors.New("ThrottlingException"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			warns := &warnCount{}
			r := newRig(t, func(c *Config) { c.Logger = slog.New(warns) })
			at := t0
			r.handle(t, r.c, r.record(t, tenant, "gw-1", at, encode(t, "ob1", at, weights("gw-1:a", 1, 60, at))))
			r.handle(t, r.c, r.record(t, tenant, "gw-2", at, encode(t, "ob2", at, weights("gw-2:a", 1, 60, at))))
			// New seqs within AckEvery: acks, state and rollups wait for a flush.
			at = t0.Add(time.Minute)
			r.clock.Set(at)
			r.handle(t, r.c, r.record(t, tenant, "gw-1", at, encode(t, "ob1", at, weights("gw-1:a", 61, 120, at))))
			r.handle(t, r.c, r.record(t, tenant, "gw-2", at, encode(t, "ob2", at, weights("gw-2:a", 61, 120, at))))
			if w := warns.take(); len(w) > 0 {
				t.Fatalf("warnings before any failure: %q", w)
			}
			r.db.mu.Lock()
			r.db.fail = tt.err
			r.db.mu.Unlock()
			r.pub.mu.Lock()
			r.pub.fail = tt.err
			r.pub.mu.Unlock()
			r.clock.Set(t0.Add(DefaultAckEvery + 2*time.Minute)) // acks and rollups due
			ctx, cancel := context.WithCancel(context.Background())
			if tt.stopped {
				cancel()
			}
			defer cancel()
			r.c.Flush(ctx)
			if w := warns.take(); (len(w) > 0) != tt.wantWarn {
				t.Errorf("flush with every write failing (%v), context ended %v: warnings %q; want warnings: %v", tt.err, tt.stopped, w, tt.wantWarn)
			}
		})
	}
}
