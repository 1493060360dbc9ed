package dev_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// TestDevProcessStopsCleanly runs `bowline dev` as a real process: it
// comes up, prints its report as JSON and a status line, and on SIGINT it
// exits 0 leaving none of its child processes (the emulators) behind.
func TestDevProcessStopsCleanly(t *testing.T) {
	lstest.Stack(t) // skips without the emulators (fails under CI=true)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bowline")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/bowline").CombinedOutput(); err != nil {
		t.Fatalf("go build bowline: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "dev", "--json", "--bowls", "2", "--every", "1s", "--speed", "60", "--data-dir", filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "BOWLINE_API_ADDR=127.0.0.1:0", "BOWLINE_STACK=p"+randHex(4), "BOWLINE_API_TOKENS=", "BOWLINE_WEBHOOK_SECRET=", "BOWLINE_OPS_TOKEN=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = t.Output()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start bowline dev: %v", err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("bowline dev ended before %s: %v", what, <-exited)
			}
			return l
		case <-time.After(3 * time.Minute): // hang guard
			t.Fatalf("no %s from bowline dev", what)
		}
		return ""
	}

	var rep dev.Report
	if l := next("report"); json.Unmarshal([]byte(l), &rep) != nil || rep.API.URL == "" || len(rep.EmulatorPids) == 0 {
		t.Fatalf("first line %q; want the JSON report with the API URL and the emulator pids", l)
	}
	if len(rep.Bowls) != 2 || len(rep.Tenants) != 2 || len(rep.API.Tokens) != 2 || rep.API.WebhookSecret == "" || rep.API.OpsToken == "" {
		t.Errorf("report bowls %d, tenants %v, tokens %d, secret %q, ops token %q; want 2 bowls, 2 tenants, a token each and generated secrets",
			len(rep.Bowls), rep.Tenants, len(rep.API.Tokens), rep.API.WebhookSecret, rep.API.OpsToken)
	}
	var f dev.Figures
	if l := next("status line"); json.Unmarshal([]byte(l), &f) != nil || f.At.IsZero() {
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
	children := descendants(cmd.Process.Pid)
	for _, pid := range rep.EmulatorPids {
		if !children[pid] {
			t.Errorf("emulator pid %d is not a child of bowline dev (children %v)", pid, children)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range lines { // drain the rest of stdout
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("bowline dev after SIGINT: %v; want exit status 0", err)
		}
	case <-time.After(2 * time.Minute): // hang guard
		t.Fatal("bowline dev did not exit after SIGINT")
	}
	for pid := range children {
		if alive(pid) {
			t.Errorf("process %d (%s), started by bowline dev, still runs after it exited", pid, comm(pid))
		}
	}
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
