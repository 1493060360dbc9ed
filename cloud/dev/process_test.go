package dev_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// devProc is `bowline dev --json` running as a process.
type devProc struct {
	child  *testkit.Child
	lines  <-chan string // stdout
	stderr *lockedBuffer
	rep    dev.Report
}

// lockedBuffer is a bytes.Buffer safe for the writer goroutine of exec.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startDev builds and starts `bowline dev` with 2 bowls and reads its
// JSON report.
func startDev(t *testing.T) *devProc {
	t.Helper()
	lstest.Stack(t) // skips without the emulators (fails under CI=true)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bowline")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/bowline").CombinedOutput(); err != nil {
		t.Fatalf("go build bowline: %v\n%s", err, out)
	}
	p := &devProc{stderr: &lockedBuffer{}}
	cmd := exec.Command(bin, "dev", "--json", "--bowls", "2", "--every", "1s", "--speed", "60", "--data-dir", filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "BOWLINE_API_ADDR=127.0.0.1:0", "BOWLINE_STACK=p"+randHex(4), "BOWLINE_API_TOKENS=", "BOWLINE_WEBHOOK_SECRET=", "BOWLINE_OPS_TOKEN=")
	cmd.Stderr = io.MultiWriter(t.Output(), p.stderr)
	p.child = testkit.StartChildLines(t, "bowline dev", cmd)
	p.lines = p.child.Lines()
	if l := p.next(t, "report"); json.Unmarshal([]byte(l), &p.rep) != nil || p.rep.API.URL == "" || len(p.rep.EmulatorPids) == 0 {
		t.Fatalf("first line %q; want the JSON report with the API URL and the emulator pids", l)
	}
	return p
}

func (p *devProc) next(t *testing.T, what string) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("bowline dev ended before %s: %v", what, p.child.Err())
		}
		return l
	case <-time.After(3 * time.Minute): // hang guard
		t.Fatalf("no %s from bowline dev", what)
	}
	return ""
}

// wait drains stdout, waits for the exit and returns the last stdout line.
func (p *devProc) wait(t *testing.T) (last string, err error) {
	t.Helper()
	for l := range p.lines {
		last = l
	}
	select {
	case <-p.child.Exited():
		return last, p.child.Err()
	case <-time.After(2 * time.Minute): // hang guard
		t.Fatal("bowline dev did not exit")
	}
	return "", nil
}

// TestDevProcessStopsCleanly runs `bowline dev` as a real process: it
// prints its start-up steps, comes up, prints its report as JSON and a
// status line, and on SIGINT it exits 0 with one summary line, logging no
// warning while it stops and leaving none of its child processes (the
// emulators) behind.
func TestDevProcessStopsCleanly(t *testing.T) {
	p := startDev(t)
	rep := p.rep
	if len(rep.Bowls) != 2 || len(rep.Tenants) != 2 || len(rep.API.Tokens) != 2 || rep.API.WebhookSecret == "" || rep.API.OpsToken == "" {
		t.Errorf("report bowls %d, tenants %v, tokens %d, secret %q, ops token %q; want 2 bowls, 2 tenants, a token each and generated secrets",
			len(rep.Bowls), rep.Tenants, len(rep.API.Tokens), rep.API.WebhookSecret, rep.API.OpsToken)
	}
	// stderr is copied by exec's goroutine: it may trail stdout a little.
	testkit.WaitFor(t, "the start-up steps on stderr", 30*time.Second, func() bool {
		return strings.Contains(p.stderr.String(), "starting the emulators") && strings.Contains(p.stderr.String(), "s ready")
	})
	var f dev.Figures
	if l := p.next(t, "status line"); json.Unmarshal([]byte(l), &f) != nil || f.At.IsZero() {
		t.Fatalf("second line %q; want a JSON status line", l)
	}
	// One registry serves every in-process part's metrics at the API.
	resp, err := http.Get(rep.API.MetricsURL)
	if err != nil {
		t.Fatalf("GET %s: %v", rep.API.MetricsURL, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"bowline_consumer_samples_total", "bowline_worker_received_total", "go_goroutines"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("GET %s lacks %s", rep.API.MetricsURL, m)
		}
	}
	children := descendants(p.child.Pid())
	for _, pid := range rep.EmulatorPids {
		if !children[pid] {
			t.Errorf("emulator pid %d is not a child of bowline dev (children %v)", pid, children)
		}
	}

	stopAt := time.Now()
	if err := p.child.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	last, err := p.wait(t)
	if err != nil {
		t.Fatalf("bowline dev after SIGINT: %v; want exit status 0", err)
	}
	var sum struct {
		Stopped dev.Summary `json:"stopped"`
	}
	if json.Unmarshal([]byte(last), &sum) != nil || sum.Stopped.Ran <= 0 || sum.Stopped.Stop <= 0 {
		t.Errorf("last line %q; want the JSON stop summary", last)
	}
	// Cancellations caused by the stop are no news: nothing at WARN or
	// above after SIGINT.
	for _, l := range strings.Split(p.stderr.String(), "\n") {
		at, ok := logTime(l)
		if ok && !at.Before(stopAt) && (strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || strings.Contains(l, " WARN ")) {
			t.Errorf("bowline dev logged while stopping: %s", l)
		}
	}
	for pid := range children {
		if alive(pid) {
			t.Errorf("process %d (%s), started by bowline dev, still runs after it exited", pid, comm(pid))
		}
	}
}

// TestDevProcessExitsWhenAnEmulatorDies: an emulator killed under
// `bowline dev` stops it with exit status 1 and a message naming the
// emulator, instead of every part retrying against it silently.
func TestDevProcessExitsWhenAnEmulatorDies(t *testing.T) {
	p := startDev(t)
	victim := p.rep.EmulatorPids[len(p.rep.EmulatorPids)-1]
	name := comm(victim)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatalf("kill emulator %d: %v", victim, err)
	}
	_, err := p.wait(t)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("bowline dev after its emulator %d (%s) was killed: %v; want exit status 1", victim, name, err)
	}
	if want := "(pid " + strconv.Itoa(victim); !strings.Contains(p.stderr.String(), want) || !strings.Contains(p.stderr.String(), "emulator") {
		t.Errorf("stderr:\n%s\nwant a message naming the emulator and %s", p.stderr.String(), want)
	}
}

// logTime is the time of a log line: slog's time=RFC3339 or the AWS
// SDK's "SDK 2006/01/02 15:04:05" (local time, whole seconds: taken a
// second early, so only a line surely after the stop counts).
func logTime(l string) (time.Time, bool) {
	if v, ok := strings.CutPrefix(l, "time="); ok {
		v, _, _ = strings.Cut(v, " ")
		t, err := time.Parse(time.RFC3339Nano, v)
		return t, err == nil
	}
	if v, ok := strings.CutPrefix(l, "SDK "); ok && len(v) >= 19 {
		t, err := time.ParseInLocation("2006/01/02 15:04:05", v[:19], time.Local)
		return t.Add(-time.Second), err == nil
	}
	return time.Time{}, false
}

// descendants returns every process below pid, from /proc.
func descendants(pid int) map[int]bool {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(fields[1])
		parent[p] = pp
	}
	out := map[int]bool{}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			if !out[p] && (pp == pid || out[pp]) {
				out[p], changed = true, true
			}
		}
	}
	return out
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	fields := strings.Fields(rest)
	return len(fields) > 0 && fields[0] != "Z"
}

func comm(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	return strings.TrimSpace(string(b))
}
