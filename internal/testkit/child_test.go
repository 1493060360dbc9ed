//go:build unix

package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// childModeEnv makes TestChildHelper act as one of the children below.
const childModeEnv = "BOWLINE_TESTKIT_CHILD"

// TestChildHelper is the child process of the tests below, not a test:
//   - lines: prints three lines, the last without a newline, and exits 3;
//   - sleep: prints "pid <pid>" and sleeps;
//   - parent: starts a sleeping child of its own with StartChild, prints
//     "grandchild <pid>" and sleeps;
//   - forker: starts a sleeping child with plain os/exec, in its own
//     process group, prints "grandchild <pid>" and sleeps;
//   - hang: waits with testkit.Context on a child that never exits.
func TestChildHelper(t *testing.T) {
	switch os.Getenv(childModeEnv) {
	case "":
		t.Skip("helper process for the child tests")
	case "lines":
		fmt.Print("one\ntwo\nthree")
		os.Exit(3)
	case "sleep":
		fmt.Printf("pid %d\n", os.Getpid())
		time.Sleep(time.Hour)
	case "parent":
		cmd := testkit.TestBinary("-test.run=^TestChildHelper$")
		cmd.Env = append(os.Environ(), childModeEnv+"=sleep")
		c := testkit.StartChildLines(t, "grandchild", cmd)
		<-c.Lines()
		fmt.Printf("grandchild %d\n", c.Pid())
		time.Sleep(time.Hour)
	case "forker":
		cmd := testkit.TestBinary("-test.run=^TestChildHelper$")
		cmd.Env = append(os.Environ(), childModeEnv+"=sleep")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("grandchild %d\n", cmd.Process.Pid)
		time.Sleep(time.Hour)
	case "hang":
		cmd := testkit.TestBinary("-test.run=^TestChildHelper$")
		cmd.Env = append(os.Environ(), childModeEnv+"=sleep")
		if err := testkit.StartChild(t, "sleeper", cmd).Wait(testkit.Context(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// helper starts TestChildHelper in mode as a child of t.
func helper(t *testing.T, mode string, args ...string) *testkit.Child {
	t.Helper()
	cmd := testkit.TestBinary(append([]string{"-test.run=^TestChildHelper$"}, args...)...)
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode)
	return testkit.StartChildLines(t, mode, cmd)
}

// pidLine reads the next line of c, "<word> <pid>", and returns the pid.
func pidLine(t *testing.T, c *testkit.Child, word string) int {
	t.Helper()
	select {
	case l := <-c.Lines():
		pid, err := strconv.Atoi(strings.TrimPrefix(l, word+" "))
		if err != nil {
			t.Fatalf("line %q; want %q and a pid", l, word)
		}
		return pid
	case <-time.After(time.Minute):
		t.Fatalf("no %q line from %s", word, "child")
	}
	return 0
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return runtime.GOOS != "linux"
	}
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	f := strings.Fields(rest)
	return len(f) > 0 && f[0] != "Z"
}

func TestChildLinesAndExitCode(t *testing.T) {
	c := helper(t, "lines")
	var got []string
	for l := range c.Lines() {
		got = append(got, l)
	}
	if want := []string{"one", "two", "three"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("lines = %q; want %q", got, want)
	}
	err := c.Wait(t.Context())
	if code := testkit.ExitCode(err); code != 3 {
		t.Errorf("Wait = %v, exit code %d; want 3", err, code)
	}
}

func TestChildOutputIsStdout(t *testing.T) {
	cmd := testkit.TestBinary("-test.run=^TestChildHelper$")
	cmd.Env = append(os.Environ(), childModeEnv+"=lines")
	out, err := testkit.ChildOutput(t.Context(), t, "lines", cmd)
	if string(out) != "one\ntwo\nthree" || testkit.ExitCode(err) != 3 {
		t.Errorf("ChildOutput = %q, %v; want the three lines and exit 3", out, err)
	}
}

func TestChildSignalReportsHowItExited(t *testing.T) {
	c := helper(t, "sleep")
	pidLine(t, c, "pid")
	err := c.Stop(syscall.SIGTERM, time.Minute)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || testkit.ExitCode(err) != -1 || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("Wait after SIGTERM = %v (code %d); want an exit by signal: terminated", err, testkit.ExitCode(err))
	}
	if c.Err() != err {
		t.Errorf("Err = %v; want Wait's %v", c.Err(), err)
	}
}

// The cleanup kills the child's whole group: the child and what it
// started (in its group: a child's own StartChild children have their
// groups and die by the parent-death signal).
func TestChildCleanupKillsGroup(t *testing.T) {
	var child, grandchild int
	t.Run("start", func(t *testing.T) {
		c := helper(t, "forker")
		child = c.Pid()
		grandchild = pidLine(t, c, "grandchild")
	})
	if alive(child) {
		t.Errorf("child %d alive after the cleanup reaped it", child)
	}
	// SIGKILL lands when the grandchild is next scheduled.
	testkit.WaitFor(t, "the grandchild, in the child's group, to die", time.Minute, func() bool { return !alive(grandchild) })
}

// A child whose parent dies without running its cleanups (SIGKILL) gets
// the parent-death signal.
func TestChildDiesWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	c := helper(t, "parent")
	grandchild := pidLine(t, c, "grandchild")
	if err := c.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the grandchild to die with its parent", time.Minute, func() bool { return !alive(grandchild) })
}

func TestWaitKillsAChildStillRunningWhenCtxEnds(t *testing.T) {
	c := helper(t, "sleep")
	pidLine(t, c, "pid")
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := c.Wait(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "sleep (pid") || testkit.ExitCode(err) != -2 {
		t.Errorf("Wait = %v; want the child named and the deadline exceeded", err)
	}
	if alive(c.Pid()) {
		t.Errorf("child %d still alive after Wait gave up", c.Pid())
	}
}

// A test that waits on a hung child with testkit.Context fails with a
// message before -timeout, instead of the binary panicking.
func TestContextEndsBeforeTheTimeout(t *testing.T) {
	var out strings.Builder
	cmd := testkit.TestBinary("-test.run=^TestChildHelper$", "-test.timeout=4s", "-test.v")
	cmd.Env = append(os.Environ(), childModeEnv+"=hang")
	cmd.Stdout, cmd.Stderr = &out, &out
	err := testkit.RunChild(t.Context(), t, "hang", cmd)
	if testkit.ExitCode(err) != 1 || !strings.Contains(out.String(), "sleeper (pid") ||
		!strings.Contains(out.String(), "before the test binary's -timeout") || strings.Contains(out.String(), "panic: test timed out") {
		t.Errorf("test binary waiting on a hung child: %v, output:\n%s\nwant exit 1, the child named, the margin given and no timeout panic", err, out.String())
	}
}

func TestContextWithoutDeadlineIsTheTestContext(t *testing.T) {
	f := run(t, t.Context(), func(f *fakeT) {
		if ctx := testkit.Context(f); ctx != f.ctx {
			f.Fatalf("Context = %v; want t.Context()", ctx)
		}
	})
	if f.failed != "" {
		t.Error(f.failed)
	}
}
