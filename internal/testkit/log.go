package testkit

import (
	"io"
	"log/slog"
	"sync"
	"testing"
)

// Logger returns a text logger that writes records at level and above to
// t.Output(): they appear with the test's other output (on failure, or
// always with -v), indented under its name, without t.Log's file:line
// prefix.
//
// A record logged once the test's cleanups have reached this logger's own
// (registered here, so it runs after every cleanup registered later, such
// as closing a broker the test started) is dropped. A client library's
// goroutine (paho's connection-lost handler, a broker's connection
// goroutine) may still log after that. Passing such a write on to
// t.Output() is a data race inside the testing package (it reads a
// parent's done flag that tRunner writes without a lock) and, once every
// test is done, a panic; either fails the whole binary for a line nobody
// would read.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	w := &untilCleanup{w: t.Output()}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// untilCleanup passes writes to w until stop, then drops them. stop waits
// for a write in progress, so none reaches w after stop returns.
type untilCleanup struct {
	mu      sync.RWMutex
	stopped bool
	w       io.Writer
}

func (u *untilCleanup) Write(p []byte) (int, error) {
	u.mu.RLock()
	defer u.mu.RUnlock()
	if u.stopped {
		return len(p), nil
	}
	return u.w.Write(p)
}

func (u *untilCleanup) stop() {
	u.mu.Lock()
	u.stopped = true
	u.mu.Unlock()
}
