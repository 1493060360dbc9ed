package testkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// childWaitDelay bounds how long Wait waits for a child's output pipes
// after it exited: a process outside its group may still hold them.
const childWaitDelay = 5 * time.Second

// Child is a process a test started with StartChild: the test binary run
// again (TestBinary) or a built command. It runs in its own process group
// and, on Linux, gets SIGKILL when the test binary dies, so a killed or
// timed-out `go test` leaves nothing behind; the test's cleanup SIGKILLs
// the group and reaps it.
type Child struct {
	name  string
	cmd   *exec.Cmd
	done  chan struct{} // closed once the child is reaped and its output read
	err   error         // cmd.Wait's answer, set before done closes
	lines *lineQueue    // nil unless started by StartChildLines
}

// TestBinary returns a command that runs this test binary again with args
// and the test's environment; set cmd.Env to add to it. With args
// "-test.run=^$" the child runs no test and its TestMain decides, from an
// environment variable, what it does instead.
func TestBinary(args ...string) *exec.Cmd {
	bin, err := os.Executable()
	if err != nil {
		bin = os.Args[0]
	}
	return exec.Command(bin, args...)
}

// StartChild starts cmd, named name in logs and failures. Its stdout and
// stderr, where cmd leaves them nil, go to the test's output, one
// "name: line" at a time; set them to a buffer or a file to keep them
// instead. The test fails if cmd cannot start.
//
// At the test's cleanup the child's whole process group gets SIGKILL and
// the child is reaped. A child started from a goroutine that then exits
// while locked to its OS thread (runtime.LockOSThread) gets its parent-death
// signal early: Linux ties it to the starting thread.
func StartChild(t testing.TB, name string, cmd *exec.Cmd) *Child {
	t.Helper()
	return startChild(t, name, cmd, nil)
}

// StartChildLines is StartChild, but every line the child writes to
// stdout (and to stderr too, where cmd.Stderr is nil) is delivered on
// Lines instead of to the test's output. No line is dropped, however
// slowly the test reads.
func StartChildLines(t testing.TB, name string, cmd *exec.Cmd) *Child {
	t.Helper()
	return startChild(t, name, cmd, newLineQueue())
}

func startChild(t testing.TB, name string, cmd *exec.Cmd, lines *lineQueue) *Child {
	t.Helper()
	if cmd.Process != nil {
		t.Fatalf("start %s: already started", name)
	}
	c := &Child{name: name, cmd: cmd, done: make(chan struct{}), lines: lines}
	var logOut *lineWriter
	if lines != nil {
		if cmd.Stdout == nil {
			cmd.Stdout = lines
		}
		if cmd.Stderr == nil {
			cmd.Stderr = lines
		}
	}
	if cmd.Stdout == nil || cmd.Stderr == nil {
		logOut = &lineWriter{line: func(l []byte) { fmt.Fprintf(t.Output(), "%s: %s\n", name, l) }}
		if cmd.Stdout == nil {
			cmd.Stdout = logOut
		}
		if cmd.Stderr == nil {
			cmd.Stderr = logOut
		}
	}
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = childWaitDelay
	}
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		if lines != nil {
			lines.stop()
		}
		t.Fatalf("start %s (%s): %v", name, cmd.Path, err)
	}
	go func() {
		c.err = cmd.Wait()
		if logOut != nil {
			logOut.flush()
		}
		if lines != nil {
			lines.flush() // a last line with no newline
		}
		close(c.done)
		if lines != nil {
			lines.close() // Lines ends after Exited: Err is set by then
		}
	}()
	t.Cleanup(func() {
		killGroup(cmd.Process)
		<-c.done
		killGroup(cmd.Process) // anything the child left in its group
		if lines != nil {
			lines.stop()
		}
	})
	return c
}

// Pid is the child's process id, which is also its process group id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Signal sends sig to the child alone (not its group): SIGTERM to test a
// graceful stop, SIGKILL to crash it, SIGSTOP and SIGCONT to freeze it.
func (c *Child) Signal(sig os.Signal) error {
	if err := c.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %s (pid %d) with %v: %w", c.name, c.Pid(), sig, err)
	}
	return nil
}

// Kill sends SIGKILL to the child's whole process group; Wait reaps it.
func (c *Child) Kill() { killGroup(c.cmd.Process) }

// Exited is closed once the child has exited and all its output has been
// read; Err then says how it exited.
func (c *Child) Exited() <-chan struct{} { return c.done }

// Err says how the child exited, once Exited is closed: nil for status 0,
// else an *exec.ExitError (ExitCode, or "signal: killed" from its String).
func (c *Child) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return fmt.Errorf("%s (pid %d) is still running", c.name, c.Pid())
	}
}

// Wait waits for the child to exit and returns Err. If ctx ends first it
// kills the child's group and returns an error naming the child and
// wrapping ctx.Err(); pass Context(t), or a shorter hang guard derived
// from it, so a hung child fails the test with that message.
func (c *Child) Wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
	}
	select {
	case <-c.done: // it exited as ctx ended
		return c.err
	default:
	}
	c.Kill()
	<-c.done
	return fmt.Errorf("%s (pid %d) still running, killed: %w", c.name, c.Pid(), context.Cause(ctx))
}

// Stop sends sig to the child and waits up to grace for it to exit, then
// kills its group: Wait's answer. It works in a cleanup too, where the
// test's context has already ended.
func (c *Child) Stop(sig os.Signal, grace time.Duration) error {
	if err := c.Signal(sig); err != nil {
		select {
		case <-c.done: // it had exited already
			return c.err
		default:
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	return c.Wait(ctx)
}

// Lines delivers every line of a child started by StartChildLines, in
// order and without the newline; it is closed after the last line, once
// Exited is closed. It is nil for StartChild.
func (c *Child) Lines() <-chan string {
	if c.lines == nil {
		return nil
	}
	return c.lines.out
}

// RunChild runs cmd to its end (StartChild, then Wait) and returns how it
// exited, like cmd.Run. If ctx ends first the child's group is killed and
// the error says so.
func RunChild(ctx context.Context, t testing.TB, name string, cmd *exec.Cmd) error {
	t.Helper()
	return StartChild(t, name, cmd).Wait(ctx)
}

// ChildOutput is RunChild returning what the child wrote to stdout, like
// cmd.Output; its stderr goes to the test's output unless cmd sets it.
func ChildOutput(ctx context.Context, t testing.TB, name string, cmd *exec.Cmd) ([]byte, error) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout = &out
	err := RunChild(ctx, t, name, cmd)
	return out.Bytes(), err
}

// ExitCode is the exit status in err, as returned by Wait, Err or
// RunChild: 0 for nil, -1 for a child ended by a signal, and -2 for an
// error that is no exit (a context that ended before the child did).
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -2
}

// Context returns a context that ends when the test ends or a margin
// before the test binary's -timeout deadline (t.Deadline), whichever is
// first: a wait bounded by it fails the test with a message and runs its
// cleanups, where the deadline itself would panic the whole binary. The
// margin is a twentieth of the time left, between 1 and 30 seconds.
func Context(t testing.TB) context.Context {
	t.Helper()
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return t.Context()
	}
	deadline, ok := d.Deadline()
	if !ok {
		return t.Context()
	}
	left := time.Until(deadline)
	margin := min(max(left/20, time.Second), 30*time.Second, left/2)
	ctx, cancel := context.WithDeadlineCause(t.Context(), deadline.Add(-margin),
		fmt.Errorf("%s before the test binary's -timeout", margin))
	t.Cleanup(cancel)
	return ctx
}

// lineWriter calls line for every complete line written to it.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	line func([]byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.line(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

// flush hands on a last line that had no newline.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.line(w.buf)
		w.buf = nil
	}
}

// lineQueue is an io.Writer whose lines come out of the channel out, with
// no bound on what waits in between: the child never blocks on a test
// that reads slowly, and Wait never waits for the test to read.
type lineQueue struct {
	lineWriter
	qmu     sync.Mutex
	queue   []string
	closed  bool
	more    chan struct{} // a token when queue grew or closed
	stopped chan struct{} // closed by stop: nobody reads any more
	out     chan string
}

var _ io.Writer = (*lineQueue)(nil)

func newLineQueue() *lineQueue {
	q := &lineQueue{more: make(chan struct{}, 1), stopped: make(chan struct{}), out: make(chan string)}
	q.line = q.push
	go q.pump()
	return q
}

func (q *lineQueue) push(l []byte) {
	q.qmu.Lock()
	q.queue = append(q.queue, string(l))
	q.qmu.Unlock()
	q.signal()
}

func (q *lineQueue) signal() {
	select {
	case q.more <- struct{}{}:
	default:
	}
}

// close ends out once the queue has drained.
func (q *lineQueue) close() {
	q.qmu.Lock()
	q.closed = true
	q.qmu.Unlock()
	q.signal()
}

// stop ends the pump even if nobody reads what is left.
func (q *lineQueue) stop() { close(q.stopped) }

func (q *lineQueue) pump() {
	defer close(q.out)
	for {
		q.qmu.Lock()
		batch, closed := q.queue, q.closed
		q.queue = nil
		q.qmu.Unlock()
		for _, l := range batch {
			select {
			case q.out <- l:
			case <-q.stopped:
				return
			}
		}
		if closed && len(batch) == 0 {
			return
		}
		if len(batch) > 0 {
			continue // more may have come, or the close
		}
		select {
		case <-q.more:
		case <-q.stopped:
			return
		}
	}
}
