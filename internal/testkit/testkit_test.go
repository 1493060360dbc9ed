package testkit_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// fakeT records what a helper reports instead of failing the real test.
type fakeT struct {
	testing.TB
	ctx    context.Context
	out    bytes.Buffer
	failed string
}

func (f *fakeT) Helper()                  {}
func (f *fakeT) Context() context.Context { return f.ctx }
func (f *fakeT) Output() io.Writer        { return &f.out }
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls fn with a fakeT on its own goroutine, since Fatalf ends it.
func run(t *testing.T, ctx context.Context, fn func(*fakeT)) *fakeT {
	f := &fakeT{TB: t, ctx: ctx}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

func TestLoggerWritesAtLevelToTestOutput(t *testing.T) {
	f := run(t, t.Context(), func(f *fakeT) {
		log := testkit.Logger(f, slog.LevelWarn)
		log.Info("hidden")
		log.Warn("shown", "n", 1)
	})
	if got := f.out.String(); !strings.Contains(got, "msg=shown n=1") || strings.Contains(got, "hidden") {
		t.Errorf("test output = %q; want the warning only", got)
	}
}

func TestWaitForReturnsOnceCondHolds(t *testing.T) {
	calls := 0
	testkit.WaitFor(t, "the fifth call", time.Minute, func() bool { calls++; return calls == 5 })
	if calls != 5 {
		t.Errorf("cond called %d times; want 5", calls)
	}
}

func TestWaitForFailsAfterTimeout(t *testing.T) {
	start := time.Now()
	f := run(t, t.Context(), func(f *fakeT) {
		testkit.WaitFor(f, "never", 50*time.Millisecond, func() bool { return false })
	})
	if want := "timed out after 50ms waiting for never"; f.failed != want {
		t.Errorf("failure = %q; want %q", f.failed, want)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("WaitFor gave up after %s; want about 50ms", took)
	}
}

func TestWaitForFailsWhenTestContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	f := run(t, ctx, func(f *fakeT) {
		testkit.WaitFor(f, "never", time.Hour, func() bool { return false })
	})
	if want := "test ended while waiting for never: context canceled"; f.failed != want {
		t.Errorf("failure = %q; want %q", f.failed, want)
	}
}

// A slow step that keeps moving is waited for; one that stops is failed.
func TestWaitProgressWaitsWhileMovingAndFailsWhenStuck(t *testing.T) {
	n := 0
	f := run(t, t.Context(), func(f *fakeT) {
		// Each step moves by one: never stuck, however long it takes
		// beyond the stall window.
		testkit.WaitProgress(f, "twenty steps", time.Millisecond, 5*time.Millisecond, func() (bool, int) {
			n++
			time.Sleep(time.Millisecond)
			return n == 20, n
		})
	})
	if f.failed != "" || n != 20 {
		t.Errorf("WaitProgress on a moving step: failure %q after %d steps; want none after 20", f.failed, n)
	}
	f = run(t, t.Context(), func(f *fakeT) {
		testkit.WaitProgress(f, "a stuck step", time.Millisecond, 20*time.Millisecond, func() (bool, int) { return false, 7 })
	})
	if want := "no progress for 20ms waiting for a stuck step (stuck at 7)"; f.failed != want {
		t.Errorf("failure = %q; want %q", f.failed, want)
	}
}
