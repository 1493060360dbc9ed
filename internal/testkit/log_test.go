package testkit

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// A record logged after the logger's cleanup ran is dropped, never passed
// to the test's writer: a library goroutine logging late (paho's
// connection-lost handler after PASS, mochi's connection goroutine after a
// broker closed) would otherwise race with the testing package or panic
// the binary.
func TestLoggerDropsWritesAfterItsCleanup(t *testing.T) {
	var out bytes.Buffer
	w := &untilCleanup{w: &out}
	log := slog.New(slog.NewTextHandler(w, nil))
	log.Info("before")
	w.stop()
	log.Info("after")
	if got := out.String(); !strings.Contains(got, "before") || strings.Contains(got, "after") {
		t.Errorf("written = %q; want the record before stop and not the one after", got)
	}
}

// fakeTB is the part of a testing.TB that Logger uses.
type fakeTB struct {
	testing.TB
	out      bytes.Buffer
	cleanups []func()
}

func (f *fakeTB) Output() io.Writer { return &f.out }
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

// Logger stops its writer in a cleanup of the test it was made for.
func TestLoggerStopsInTheTestsCleanup(t *testing.T) {
	tb := new(fakeTB)
	log := Logger(tb, slog.LevelInfo)
	log.Info("inside")
	if len(tb.cleanups) != 1 {
		t.Fatalf("Logger registered %d cleanups; want 1", len(tb.cleanups))
	}
	tb.cleanups[0]()
	log.Info("late")
	if got := tb.out.String(); !strings.Contains(got, "inside") || strings.Contains(got, "late") {
		t.Errorf("written = %q; want the record before the cleanup and not the one after", got)
	}
}
