package testkit

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

// Logger returns a text logger that writes records at level and above to
// t.Output(): they appear with the test's other output (on failure, or
// always with -v), indented under its name, without t.Log's file:line
// prefix.
//
// A record logged after the test has completed is dropped. A client
// library's goroutine (paho's connection-lost handler, say) may still log
// once the test's cleanups closed what it talked to, and the testing
// package panics on such a write, failing the whole binary for a line
// nobody would read.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(afterDone{t.Output()}, &slog.HandlerOptions{Level: level}))
}

// afterDone passes writes to w until the test has completed, then drops
// them.
type afterDone struct{ w io.Writer }

func (a afterDone) Write(p []byte) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(string)
			if !ok || !strings.Contains(s, "has completed") {
				panic(r)
			}
			n, err = len(p), nil
		}
	}()
	return a.w.Write(p)
}
