package localstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// process is one emulator child.
type process struct {
	name     string
	endpoint string
	cmd      *exec.Cmd
	out      *tailBuffer
	done     chan struct{}
	waitErr  error
	// stopping is set by stop: an exit after it is no death.
	stopping atomic.Bool
}

// launch starts cmd in its own process group with a parent-death signal,
// capturing the tail of its output for error messages.
func launch(name string, cmd *exec.Cmd, log *slog.Logger) (*process, error) {
	out := &tailBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	log.Debug("emulator started", "name", name, "pid", cmd.Process.Pid, "args", cmd.Args)
	return p, nil
}

// waitReady calls probe until it succeeds, the child exits or ctx ends.
func (p *process) waitReady(ctx context.Context, probe func(context.Context) error) error {
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		last = probe(pctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it answered (%v); its output:\n%s", p.name, p.waitErr, p.out.String())
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer at %s before the start timeout (last error: %v); its output:\n%s", p.name, p.endpoint, last, p.out.String())
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM to the child's process group, then SIGKILL after
// grace, and waits for the child to be reaped.
func (p *process) stop(grace time.Duration) error {
	p.stopping.Store(true)
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Anything left in the group (none of our emulators fork, but be sure).
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before the emulator binds it; Start then fails with the
// emulator's own message and a retry picks another port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func loopbackURL(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// lookPath finds a runtime, or says how to install it.
func lookPath(bin, install string) (string, error) {
	p, err := exec.LookPath(bin)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("%s not found: %s: %w", bin, install, ErrNotInstalled)
		}
		return "", fmt.Errorf("look up %s: %w", bin, err)
	}
	return p, nil
}
