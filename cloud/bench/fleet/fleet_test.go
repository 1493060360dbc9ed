package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bowline-iot/bowline/internal/mosquitto"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// fleetTestEnv must be set for TestShortFleet to run: the test starts
// every emulator and Debian's Mosquitto and takes about four minutes, too
// heavy for the normal suite.
const fleetTestEnv = "BOWLINE_FLEET_BENCH"

// TestShortFleet runs the bench with 200 gateways for 2 minutes and
// checks its promises: nothing acknowledged is missing from the stream,
// every gateway heard an ack, nothing failed.
//
//	BOWLINE_FLEET_BENCH=1 go test -short=false -run TestShortFleet -timeout 15m ./cloud/bench/fleet
func TestShortFleet(t *testing.T) {
	if testing.Short() || os.Getenv(fleetTestEnv) == "" {
		t.Skipf("set %s=1 and run with -short=false: the fleet bench starts the whole local stack and runs for minutes", fleetTestEnv)
	}
	// Asked for: a missing Mosquitto fails under CI=true (testkit.Need).
	testkit.Need(t, mosquitto.Available())
	bin := filepath.Join(t.TempDir(), "fleet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--gateways", "200", "--duration", "2m", "--interval", "30s", "--ack-every", "1m", "--json", "--out", "")
	cmd.Stderr = testWriter{t}
	out, err := testkit.ChildOutput(testkit.Context(t), t, "fleet bench", cmd)
	if err != nil {
		t.Fatalf("fleet bench: %v\n%s", err, out)
	}
	var r report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("fleet bench output: %v\n%s", err, out)
	}
	f, c := r.Fleet, r.Check
	t.Logf("published %d, acked samples %d of %d sent, lag p50 %v p99 %v, cloud RSS %.0f MiB, gateways RSS %.0f MiB",
		f.Published, c.AckedSamples, f.SamplesSent, r.Consumer.LagP50, r.Consumer.LagP99, r.Processes["cloud"].PeakRSSMiB, r.Processes["gateways"].PeakRSSMiB)
	checks := []struct {
		name      string
		got, want int64
	}{
		{"acknowledged samples lost", c.AckedLost, 0},
		{"gateways connected", int64(f.Connected), 200},
		{"gateways that got an ack", int64(f.GatewaysAcked), 200},
		{"samples sent but unacknowledged at the end", f.UnackedSamples, 0},
		{"acknowledged samples", c.AckedSamples, f.SamplesSent},
		{"undecodable records", c.BadRecords, 0},
		{"publish errors", f.PublishErrors, 0},
		{"rule errors", int64(r.RuleErrors), 0},
		{"consumer dlq", int64(r.ConsumerDLQ), 0},
		{"consumer rejections", r.Consumer.Rejected, 0},
		{"acks beyond what was sent", f.AckedBeyondSent, 0},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %d; want %d", ch.name, ch.got, ch.want)
		}
	}
	if r.RulesPeakInFlight < 1 || r.RulesPeakInFlight > r.Config.RulesInFlight {
		t.Errorf("rules stand-in peak in flight = %d; want 1..%d", r.RulesPeakInFlight, r.Config.RulesInFlight)
	}
	if f.Published == 0 || f.Pubacked != f.Published {
		t.Errorf("batches PUBACKed = %d of %d published; want all, and some", f.Pubacked, f.Published)
	}
}

// testWriter sends the bench's log to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}
