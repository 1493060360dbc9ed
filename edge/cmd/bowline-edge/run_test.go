package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/edge/config"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// agentCmd returns the test binary re-executed as bowline-edge.
func agentCmd(args ...string) *exec.Cmd {
	cmd := testkit.TestBinary(args...)
	cmd.Env = append(os.Environ(), asAgentEnv+"=1")
	return cmd
}

func runAgent(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := agentCmd(args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := testkit.RunChild(testkit.Context(t), t, "bowline-edge "+args[0], cmd)
	if code := testkit.ExitCode(err); code != -2 { // an exit, by status or signal
		return code, out.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return 0, ""
}

func TestRunHelpDocumentsEveryOption(t *testing.T) {
	code, out := runAgent(t, "run", "--help")
	if code != 0 {
		t.Fatalf("run --help exit %d; want 0\n%s", code, out)
	}
	for _, opt := range []string{"-config", "-tenant", "-gateway", "-broker", "-tls-ca", "-tls-cert", "-tls-key", "-tls-alpn",
		"-mqtt-in-flight", "-mqtt-rate", "-mqtt-byte-rate", "-mqtt-puback-timeout", "-mqtt-max-payload", "-mqtt-keepalive", "-mqtt-backoff-min", "-mqtt-backoff-max",
		"-outbox", "-outbox-max-bytes", "-outbox-disk-headroom", "-outbox-event-reserve", "-outbox-telemetry-ttl", "-outbox-event-ttl",
		"-input", "-status-addr", "-insecure-open-status", "-insecure-plain-broker", "-recover", "-detect-food-low-g", "-detect-empty-g",
		"-telemetry-wire", "-telemetry-rule", "-telemetry-batch-interval", "-telemetry-ack-timeout", "-events-rule"} {
		if !strings.Contains(out, opt+" ") && !strings.Contains(out, opt+"\n") {
			t.Errorf("run --help does not document %s", opt)
		}
	}
}

// configFlags maps every leaf field of the config file (its JSON path) to
// the flag that sets it: the path with '.' and '_' as '-', except where the
// flag reads better singular or short.
func configFlags(t *testing.T) map[string]string {
	t.Helper()
	renamed := map[string]string{"outbox.path": "outbox", "inputs": "input", "things": "thing"}
	flags := map[string]string{}
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				t.Fatalf("config.File field %s%s has no JSON name", prefix, f.Name)
			}
			path := prefix + name
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[config.Duration]() {
				walk(path+".", f.Type)
				continue
			}
			flag, ok := renamed[path]
			if !ok {
				flag = strings.NewReplacer(".", "-", "_", "-").Replace(path)
			}
			flags[path] = flag
		}
	}
	walk("", reflect.TypeFor[config.File]())
	return flags
}

func TestRunHelpDocumentsEveryConfigField(t *testing.T) {
	code, out := runAgent(t, "run", "--help")
	if code != 0 {
		t.Fatalf("run --help exit %d; want 0\n%s", code, out)
	}
	flags := configFlags(t)
	if len(flags) < 30 {
		t.Fatalf("found %d config fields; want the whole config.File (30 or more)", len(flags))
	}
	for path, flag := range flags {
		if !strings.Contains(out, "-"+flag+" ") && !strings.Contains(out, "-"+flag+"\n") {
			t.Errorf("run --help documents no flag -%s for the config field %s", flag, path)
		}
	}
}

func TestRunBadConfigNamesFieldAndExits2(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := []string{"--tenant", "t1", "--gateway", "gw-1", "--broker", "tcp://127.0.0.1:1", "--input", "unix:/nonexistent", "--outbox", filepath.Join(dir, "o.db"), "--telemetry-rule", "bowline_dev_telemetry"}
	tests := []struct {
		name  string
		args  []string
		field string
	}{
		{"missing tenant", []string{"run", "--gateway", "gw"}, "tenant"},
		{"bad broker scheme", append(append([]string{"run"}, base...), "--broker", "http://x:1"), "broker"},
		{"bad input", append(append([]string{"run"}, base...), "--input", "carrier-pigeon:x"), "input"},
		{"bad rate", append(append([]string{"run"}, base...), "--mqtt-rate", "-1"), "rate"},
		{"reserve above cap", append(append([]string{"run"}, base...), "--outbox-max-bytes", "100", "--outbox-event-reserve", "200"), "event_reserve"},
		{"unknown file field", []string{"run", "--config", write("unknown.json", `{"tenant":"t1","brokr":"x"}`)}, "brokr"},
		{"wrong file type", []string{"run", "--config", write("type.json", `{"tenant":"t1","mqtt":{"in_flight":"many"}}`)}, "mqtt.in_flight"},
		{"missing telemetry rule", []string{"run", "--tenant", "t1", "--gateway", "gw-1", "--broker", "tcp://127.0.0.1:1", "--input", "unix:/x"}, "telemetry.rule"},
		{"bad telemetry wire", append(append([]string{"run"}, base...), "--telemetry-wire", "v9"), "telemetry.wire"},
		{"ack timeout under interval", append(append([]string{"run"}, base...), "--telemetry-ack-timeout", "30s"), "telemetry.ack_timeout"},
		{"missing tls key", append(append([]string{"run"}, base...), "--broker", "ssl://127.0.0.1:1", "--tls-cert", "x.pem"), "tls.key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runAgent(t, tt.args...)
			if code != 2 || !strings.Contains(out, tt.field) {
				t.Fatalf("exit %d, output %q; want exit 2 naming %s", code, out, tt.field)
			}
		})
	}
}

func TestRunRefusesCorruptOutboxUnlessRecover(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "outbox.db")
	if err := os.WriteFile(path, bytes.Repeat([]byte("torn page "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--tenant", "t1", "--gateway", "gw-1", "--broker", "tcp://127.0.0.1:1", "--input", "unix:" + filepath.Join(dir, "none.sock"), "--outbox", path, "--status-addr", "off", "--telemetry-rule", "bowline_dev_telemetry"}
	code, out := runAgent(t, args...)
	if code != 1 || !strings.Contains(out, "corrupt") || !strings.Contains(out, "--recover") {
		t.Fatalf("exit %d, output %q; want exit 1 naming the corruption and --recover", code, out)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the damaged file must stay in place: %v", err)
	}
}
