package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// secretEnv is every secret a bowline process may find in its environment
// (the task definitions' Secrets), set to values the test can search for.
var secretEnv = map[string]string{
	"BOWLINE_MQTT_KEY":       "sEcReT-mqtt-key-without-pem-armour",
	"BOWLINE_API_TOKENS":     "sEcReT-api-token=t1",
	"BOWLINE_OPS_TOKEN":      "sEcReT-ops-token",
	"BOWLINE_WEBHOOK_SECRET": "sEcReT-webhook",
	"BOWLINE_MQTT_URL":       "tcp://user:sEcReT-broker-password@127.0.0.1:1",
}

// runBowline runs the bowline binary with the secrets in its environment
// and returns its combined output.
func runBowline(t *testing.T, extraEnv []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // hang guard
	defer cancel()
	cmd := exec.Command(bowlineBin(t), args...)
	cmd.Env = append(os.Environ(), extraEnv...)
	for k, v := range secretEnv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = testkit.RunChild(ctx, t, "bowline "+args[0], cmd)
	return out.String()
}

// TestNoSecretInHelpOrUsageErrors runs every command with --help and with
// an unknown flag while every secret is in the environment: no output may
// hold a secret (the --key flag used to default to $BOWLINE_MQTT_KEY, so
// both printed the private key).
func TestNoSecretInHelpOrUsageErrors(t *testing.T) {
	top := runBowline(t, nil, "--help")
	var cmds []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z-]+) `).FindAllStringSubmatch(top, -1) {
		cmds = append(cmds, m[1])
	}
	if len(cmds) < 10 {
		t.Fatalf("bowline --help lists %d commands (%v); want every command:\n%s", len(cmds), cmds, top)
	}
	for _, c := range cmds {
		for _, args := range [][]string{{c, "--help"}, {c, "--no-such-flag"}} {
			out := runBowline(t, nil, args...)
			if strings.Contains(out, "sEcReT") {
				t.Errorf("bowline %s printed a secret from the environment:\n%s", strings.Join(args, " "), out)
			}
		}
	}
}

// TestMQTTKeyWithoutArmourIsNotEchoed: a key without its PEM armour is
// taken for a file path; the error says so without repeating the value.
func TestMQTTKeyWithoutArmourIsNotEchoed(t *testing.T) {
	cert := "BOWLINE_MQTT_CERT=-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	out := runBowline(t, []string{cert}, "rules")
	if strings.Contains(out, "sEcReT") {
		t.Fatalf("bowline rules echoed the key:\n%s", out)
	}
	if !strings.Contains(out, "client key") || !strings.Contains(out, "not shown") {
		t.Errorf("bowline rules output %q; want an error naming the client key without its value", out)
	}
}

// TestKeyFlagTakesAFileOnly: `bowline rules --key` refuses PEM text, which
// ps would show to anyone on the host (issue 22, low), with exit 2 and an
// error that names the flag and never repeats the key.
func TestKeyFlagTakesAFileOnly(t *testing.T) {
	pem := "-----BEGIN PRIVATE KEY-----\nsEcReT-key-on-the-command-line\n-----END PRIVATE KEY-----"
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // hang guard
	defer cancel()
	cmd := exec.Command(bowlineBin(t), "rules", "--cert", "cert.pem", "--key", pem)
	var combined bytes.Buffer
	cmd.Stdout, cmd.Stderr = &combined, &combined
	err := testkit.RunChild(ctx, t, "bowline rules", cmd)
	out := combined.Bytes()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("bowline rules --key <PEM text>: %v; want exit 2\n%s", err, out)
	}
	if strings.Contains(string(out), "sEcReT") {
		t.Errorf("bowline rules --key <PEM text> printed the key:\n%s", out)
	}
	if !strings.Contains(string(out), "--key") || !strings.Contains(string(out), "path") {
		t.Errorf("bowline rules --key <PEM text> said %q; want it to name --key and ask for a path", out)
	}
}
