package chaos

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// proc is one supervised child process: started, killed with SIGKILL and
// restarted with the same arguments. Its output goes to <dir>/<name>.log.
type proc struct {
	name string
	bin  string
	args []string
	env  []string
	log  string

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	kills    int
	restarts int
}

func newProc(dir, name, bin string, env []string, args ...string) *proc {
	return &proc{name: name, bin: bin, args: args, env: env, log: filepath.Join(dir, name+".log")}
}

// start starts the process; stdout, when not nil, gets its standard output
// (the log file gets it otherwise).
func (p *proc) start(stdout io.Writer) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("log of %s: %w", p.name, err)
	}
	fmt.Fprintf(f, "=== start %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env, cmd.Stderr, cmd.Stdout = p.env, f, f
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	p.cmd, p.done = cmd, done
	return nil
}

// running reports whether the process has not exited.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exited returns a channel closed when the current process exits.
func (p *proc) exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.kills++
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop sends SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// restart starts the process again if it is not running.
func (p *proc) restart() error {
	if p.running() {
		return nil
	}
	p.mu.Lock()
	p.restarts++
	p.mu.Unlock()
	return p.start(nil)
}
