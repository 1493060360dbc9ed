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
