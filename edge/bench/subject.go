package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// subject is a gateway buffer under test: a process that can be killed and
// restarted, and the source feeding it.
type subject interface {
	Name() string
	Source() source
	// Start starts the process (again, after Kill); it returns once the
	// process is up.
	Start(ctx context.Context) error
	Kill()
	Pid() int
	// Close stops the process and the source.
	Close()
}

// Errors of the harness.
var (
	// ErrNoMosquitto means mosquitto is not on PATH.
	ErrNoMosquitto = errors.New("mosquitto not found on PATH; install it with scripts/bench-edge, or: apt-get update -qq && apt-get install -y -qq mosquitto")
	// ErrStart means a subject process did not come up.
	ErrStart = errors.New("subject did not start")
)

// agentSubject runs bowline-edge against the cloud broker, fed by
// simulated MCUs.
type agentSubject struct {
	bin    string
	dir    string
	cloud  string
	rate   float64
	status string // loopback status endpoint (host:port)
	src    *mcuSource
	p      *proc
}

func newAgentSubject(bin, dir, cloudURL string, bowls int, rate float64) (*agentSubject, error) {
	src, err := newMCUSource(dir, bowls)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		src.Close()
		return nil, err
	}
	return &agentSubject{bin: bin, dir: dir, cloud: cloudURL, rate: rate, status: fmt.Sprintf("127.0.0.1:%d", port), src: src}, nil
}

func (a *agentSubject) Name() string   { return "bowline-edge" }
func (a *agentSubject) Source() source { return a.src }
func (a *agentSubject) Pid() int       { return a.p.Pid() }
func (a *agentSubject) Kill()          { a.p.Kill() }

// MetricsURL is the agent's Prometheus endpoint.
func (a *agentSubject) MetricsURL() string { return "http://" + a.status + "/metrics" }

// OutboxPath is the agent's bbolt file.
func (a *agentSubject) OutboxPath() string { return filepath.Join(a.dir, "outbox.db") }

func (a *agentSubject) args() []string {
	args := []string{"run", "--tenant", "t1", "--gateway", "gw-bench", "--broker", a.cloud,
		"--outbox", a.OutboxPath(), "--status-addr", a.status, "--log-level", "warn",
		"--mqtt-backoff-min", "20ms", "--mqtt-backoff-max", "500ms",
		// The bench compares PUBACK-time durability with Mosquitto's bridge:
		// wire v1, which forgets on the PUBACK.
		"--telemetry-wire", "v1"}
	if a.rate > 0 {
		args = append(args, "--mqtt-rate", fmt.Sprint(a.rate))
	}
	for _, in := range a.src.Inputs() {
		args = append(args, "--input", in)
	}
	return args
}

func (a *agentSubject) Start(context.Context) error {
	p, err := startProc("bowline-edge", a.bin, a.args(), filepath.Join(a.dir, "agent.log"))
	if err != nil {
		return err
	}
	a.p = p
	return nil
}

func (a *agentSubject) Close() {
	if a.p != nil {
		a.p.Stop(5 * time.Second)
	}
	a.src.Close()
}

// mosquittoConfig is a mosquitto bridge between the local publishers and
// the cloud broker.
type mosquittoConfig struct {
	Port     int
	Dir      string // persistence_location and log
	Cloud    string // host:port
	OnChange bool   // autosave_on_changes true, autosave_interval 1
	// AsRoot keeps mosquitto root when started as root (it would switch to
	// the mosquitto user and fail to write Dir).
	AsRoot bool
}

// Render writes mosquitto.conf. Everything not set here is mosquitto's
// default: max_queued_messages 1000, max_inflight_messages 20 and, unless
// OnChange, autosave_interval 1800 s.
func (c mosquittoConfig) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "listener %d 127.0.0.1\n", c.Port)
	b.WriteString("allow_anonymous true\n")
	if c.AsRoot {
		b.WriteString("user root\n")
	}
	b.WriteString("persistence true\n")
	fmt.Fprintf(&b, "persistence_location %s/\n", c.Dir)
	if c.OnChange {
		b.WriteString("autosave_on_changes true\nautosave_interval 1\n")
	}
	fmt.Fprintf(&b, "log_dest file %s/mosquitto.log\n", c.Dir)
	b.WriteString("log_type error\nlog_type warning\nlog_type notice\nlog_type information\n")
	b.WriteString("connection cloud\n")
	fmt.Fprintf(&b, "address %s\n", c.Cloud)
	b.WriteString("clientid gw-bench-bridge\n")
	b.WriteString("cleansession false\n")
	b.WriteString("try_private false\n")
	b.WriteString("bridge_protocol_version mqttv311\n")
	b.WriteString("restart_timeout 1\n")
	b.WriteString("topic dt/# out 1\n")
	return b.String()
}

// mosquittoSubject runs mosquitto as a bridge to the cloud broker, fed by
// QoS 1 publishers.
type mosquittoSubject struct {
	bin  string
	cfg  mosquittoConfig
	conf string
	src  *pubSource
	p    *proc
}

func newMosquittoSubject(dir, cloudAddr string, onChange bool, bowls, window int) (*mosquittoSubject, error) {
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		return nil, ErrNoMosquitto
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := mosquittoConfig{Port: port, Dir: dir, Cloud: cloudAddr, OnChange: onChange, AsRoot: os.Geteuid() == 0}
	conf := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(conf, []byte(cfg.Render()), 0o644); err != nil {
		return nil, fmt.Errorf("mosquitto config %s: %w", conf, err)
	}
	m := &mosquittoSubject{bin: bin, cfg: cfg, conf: conf}
	m.src = newPubSource(fmt.Sprintf("tcp://127.0.0.1:%d", port), "t1", bowls, window)
	return m, nil
}

func (m *mosquittoSubject) Name() string {
	if m.cfg.OnChange {
		return "mosquitto (autosave_on_changes)"
	}
	return "mosquitto (autosave default)"
}
func (m *mosquittoSubject) Source() source { return m.src }
func (m *mosquittoSubject) Pid() int       { return m.p.Pid() }
func (m *mosquittoSubject) Kill()          { m.p.Kill() }

// Start starts mosquitto and waits until its listener accepts; a process
// that exits at once (the port still held by the killed one) is retried.
func (m *mosquittoSubject) Start(ctx context.Context) error {
	addr := fmt.Sprintf("127.0.0.1:%d", m.cfg.Port)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		p, err := startProc("mosquitto", m.bin, []string{"-c", m.conf}, filepath.Join(m.cfg.Dir, "stdout.log"))
		if err != nil {
			return err
		}
		for !p.Exited() && time.Now().Before(deadline) {
			if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
				c.Close()
				m.p = p
				return nil
			}
			select {
			case <-ctx.Done():
				p.Kill()
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		if !p.Exited() {
			p.Kill()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("mosquitto -c %s: %w: no listener on %s (see %s/mosquitto.log)", m.conf, ErrStart, addr, m.cfg.Dir)
}

// Drops counts mosquitto's log lines about dropping queued messages.
func (m *mosquittoSubject) Drops() int {
	b, _ := os.ReadFile(filepath.Join(m.cfg.Dir, "mosquitto.log"))
	return strings.Count(string(b), "dropped")
}

func (m *mosquittoSubject) Close() {
	m.src.Close()
	if m.p != nil {
		m.p.Stop(5 * time.Second)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
