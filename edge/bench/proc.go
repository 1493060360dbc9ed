package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a subject process (bowline-edge or mosquitto) that can be killed
// with SIGKILL and replaced.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProc starts path with args, appending its output to logPath.
func startProc(name, path string, args []string, logPath string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log %s: %w", name, logPath, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, path, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL and waits for the process to end.
func (p *proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM, and SIGKILL if the process is still there after
// grace.
func (p *proc) Stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// memory is the resident set of a process from /proc/<pid>/status, in kB.
// RssFile counts the pages of mapped files (bbolt's mmap'd outbox), RssAnon
// the heap and stacks.
type memory struct {
	VmRSS    int `json:"vm_rss_kb"`
	RssAnon  int `json:"rss_anon_kb"`
	RssFile  int `json:"rss_file_kb"`
	RssShmem int `json:"rss_shmem_kb"`
	VmHWM    int `json:"vm_hwm_kb"`
}

var errNoProc = errors.New("no /proc status")

func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return memory{}, fmt.Errorf("pid %d: %w: %w", pid, errNoProc, err)
	}
	return parseStatus(string(b))
}

// parseStatus reads the memory lines of a /proc/<pid>/status document.
func parseStatus(doc string) (memory, error) {
	var m memory
	fields := map[string]*int{"VmRSS": &m.VmRSS, "RssAnon": &m.RssAnon, "RssFile": &m.RssFile, "RssShmem": &m.RssShmem, "VmHWM": &m.VmHWM}
	seen := 0
	for line := range strings.SplitSeq(doc, "\n") {
		k, v, ok := strings.Cut(line, ":")
		dst := fields[k]
		if !ok || dst == nil {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		if err != nil {
			return memory{}, fmt.Errorf("status line %q: %w", line, err)
		}
		*dst = n
		seen++
	}
	if m.VmRSS == 0 || seen < 2 {
		return memory{}, fmt.Errorf("status document without VmRSS: %w", errNoProc)
	}
	return m, nil
}

// maxMemory keeps the field-wise maximum.
func maxMemory(a, b memory) memory {
	return memory{VmRSS: max(a.VmRSS, b.VmRSS), RssAnon: max(a.RssAnon, b.RssAnon), RssFile: max(a.RssFile, b.RssFile),
		RssShmem: max(a.RssShmem, b.RssShmem), VmHWM: max(a.VmHWM, b.VmHWM)}
}
