// Package mosquitto runs Debian's Mosquitto broker as a child process, for
// tests and tools that need an MQTT broker nobody here wrote: persistent
// sessions on disk, shared subscriptions and session takeover exactly as
// Mosquitto implements them.
//
// Proving ground: the broker of chaos, the benches and tests, never linked
// into a product; `bowline dev` embeds internal/mqttbroker instead
// (docs/README.md, "The proving ground").
//
// A Broker keeps its port and its persistence directory across Kill and
// Restart, so a test can cut the broker and bring it back with the queued
// QoS 1 messages of persistent sessions that Mosquitto saved.
//
// # Caveats
//
// Mosquitto saves its in-memory database to disk every AutosaveInterval
// (default 1 s here) and on a clean stop; a SIGKILL loses what changed
// since the last save, as it would on a real broker; Stop saves. After a
// restart a persistent session comes back without its shared
// subscription: until the client subscribes again, messages for its group
// are acknowledged to the publisher and dropped
// (TestSharedSubscriptionNotRestored; cloud/chaos works around it, see
// docs/chaos.md). Anonymous clients are allowed on the loopback listener
// only.
package mosquitto

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotInstalled is returned when the mosquitto binary is not on PATH.
var ErrNotInstalled = errors.New("mosquitto is not installed: run ./scripts/setup (it installs Debian's mosquitto)")

// Config says how to start a Broker.
type Config struct {
	// Dir holds the config file and the persistence database. Required:
	// pass t.TempDir() in tests.
	Dir string
	// Port is the loopback port; 0 picks a free one.
	Port int
	// AutosaveInterval is how often Mosquitto saves its database. Default 1s.
	AutosaveInterval time.Duration
	// Extra lines appended to mosquitto.conf.
	Extra []string
	// Logger receives the broker's output when it exits unexpectedly.
	Logger *slog.Logger
	// StartTimeout bounds Start and Restart. Default 15s.
	StartTimeout time.Duration
}

// Broker is a running (or killed, restartable) Mosquitto.
type Broker struct {
	cfg  Config
	bin  string
	conf string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	out  *output
}

// Available reports whether the mosquitto binary is installed.
func Available() error {
	if _, err := lookPath(); err != nil {
		return err
	}
	return nil
}

func lookPath() (string, error) {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	// Debian installs it in /usr/sbin, which is not on every PATH.
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return "/usr/sbin/mosquitto", nil
	}
	return "", ErrNotInstalled
}

// Start writes the config and starts Mosquitto, returning once it accepts
// TCP connections.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	if cfg.Dir == "" {
		return nil, errors.New("mosquitto: Config.Dir is required")
	}
	if cfg.AutosaveInterval <= 0 {
		cfg.AutosaveInterval = time.Second
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	bin, err := lookPath()
	if err != nil {
		return nil, err
	}
	if cfg.Port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("mosquitto: find a free port: %w", err)
		}
		cfg.Port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	dataDir := filepath.Join(cfg.Dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("mosquitto: %w", err)
	}
	secs := max(1, int(cfg.AutosaveInterval/time.Second))
	lines := []string{
		"listener " + strconv.Itoa(cfg.Port) + " 127.0.0.1",
		"allow_anonymous true",
		"persistence true",
		"persistence_location " + dataDir + "/",
		"autosave_interval " + strconv.Itoa(secs),
		// Keep every queued QoS 1 message of an offline persistent session
		// (AWS IoT keeps them up to its own quota; the default 1000 would
		// drop silently under load).
		"max_queued_messages 0",
		"max_inflight_messages 0",
		"log_dest stderr",
		"log_type error",
		"log_type warning",
	}
	if os.Geteuid() == 0 {
		// As root Mosquitto drops to user "mosquitto", which cannot write Dir.
		lines = append(lines, "user root")
	}
	lines = append(lines, cfg.Extra...)
	conf := filepath.Join(cfg.Dir, "mosquitto.conf")
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("mosquitto: write config: %w", err)
	}
	b := &Broker{cfg: cfg, bin: bin, conf: conf}
	if err := b.Restart(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// URL is the broker's address as tcp://127.0.0.1:port.
func (b *Broker) URL() string { return "tcp://" + b.Addr() }

// Addr is 127.0.0.1:port.
func (b *Broker) Addr() string { return "127.0.0.1:" + strconv.Itoa(b.cfg.Port) }

// Dir is the directory holding the config and the persistence database.
func (b *Broker) Dir() string { return b.cfg.Dir }

// Restart starts Mosquitto again on the same port and persistence
// directory (or for the first time). It is an error while it runs.
func (b *Broker) Restart(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd != nil {
		return errors.New("mosquitto: already running")
	}
	cmd := exec.Command(b.bin, "-c", b.conf)
	out := &output{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("mosquitto: start: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	b.cmd, b.done, b.out = cmd, done, out

	ctx, cancel := context.WithTimeout(ctx, b.cfg.StartTimeout)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-done:
			b.cmd = nil
			return fmt.Errorf("mosquitto exited before it listened on %s; its output:\n%s", b.Addr(), out.String())
		case <-ctx.Done():
			return fmt.Errorf("mosquitto did not listen on %s before %s: %w", b.Addr(), b.cfg.StartTimeout, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL, as a crash or power loss would, and waits for exit.
// Whatever Mosquitto had not yet saved is lost.
func (b *Broker) Kill() { b.signal(syscall.SIGKILL) }

// Stop sends SIGTERM, so Mosquitto saves its database, and waits for exit.
func (b *Broker) Stop() { b.signal(syscall.SIGTERM) }

func (b *Broker) signal(sig syscall.Signal) {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.cmd = nil
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Pid is the running broker's pid, or 0.
func (b *Broker) Pid() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil {
		return 0
	}
	return b.cmd.Process.Pid
}

// Close stops the broker gracefully. It is safe to call more than once.
func (b *Broker) Close() error {
	b.Stop()
	return nil
}

// output collects the child's stdout and stderr for error messages.
type output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.b.Len() < 64<<10 {
		o.b.Write(p)
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
