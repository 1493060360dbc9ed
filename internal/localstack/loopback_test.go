package localstack_test

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// listening returns the local addresses of the TCP sockets in LISTEN
// state that process pid or any of its descendants holds (Linux /proc).
func listening(t *testing.T, pid int) []netip.AddrPort {
	t.Helper()
	inodes := map[string]bool{}
	var walk func(pid int)
	walk = func(pid int) {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
		kids, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, k := range kids {
			b, _ := os.ReadFile(k)
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					walk(c)
				}
			}
		}
	}
	walk(pid)
	var out []netip.AddrPort
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			t.Fatalf("%s: %v (this test reads Linux /proc)", table, err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] { // 0A: LISTEN
				continue
			}
			out = append(out, parseProcAddr(t, fs[1]))
		}
		f.Close()
	}
	return out
}

// parseProcAddr parses /proc/net/tcp's "0100007F:1F90" (little-endian
// 32-bit words) into an address and port.
func parseProcAddr(t *testing.T, s string) netip.AddrPort {
	t.Helper()
	host, port, _ := strings.Cut(s, ":")
	raw, err := hex.DecodeString(host)
	if err != nil {
		t.Fatalf("proc address %q: %v", s, err)
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	a, _ := netip.AddrFromSlice(raw)
	p, _ := strconv.ParseUint(port, 16, 16)
	return netip.AddrPortFrom(a.Unmap(), uint16(p))
}

// TestEverythingListensOnLoopbackOnly: every emulator child and the
// embedded broker (in this process) listen on loopback only, so `bowline
// dev` and the tests expose nothing to the network.
func TestEverythingListensOnLoopbackOnly(t *testing.T) {
	s := lstest.Stack(t)
	pids := append(s.Pids(), os.Getpid())
	seen := 0
	for _, pid := range pids {
		for _, ap := range listening(t, pid) {
			seen++
			if !ap.Addr().IsLoopback() {
				t.Errorf("pid %d listens on %s: not loopback", pid, ap)
			}
		}
	}
	if seen < len(pids) {
		t.Fatalf("found %d listening sockets for %d processes; the /proc walk is broken", seen, len(pids))
	}
}
