package chaos

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"
)

// Fault kinds.
const (
	FaultKill       = "kill"        // SIGKILL a process, restart it after For
	FaultBroker     = "broker"      // stop Mosquitto, restart it after For (broker.go)
	FaultNet        = "net"         // a toxic on a link for For: Detail latency, reset_peer or timeout
	FaultThrottle   = "throttle"    // throttling answers from DynamoDB or Kinesis for For
	FaultProvider   = "provider"    // a provider answers 5xx (Detail "5xx") or hangs (Detail "hang") for For
	FaultPowerCut   = "power_cut"   // an edge power cut (hook: a SIGKILL of the agent until internal/powercut is wired)
	FaultBadWebhook = "bad_webhook" // a webhook with a bad signature: must be refused, never an effect
)

// Fault is one scheduled fault.
type Fault struct {
	At     time.Duration `json:"at"`
	Kind   string        `json:"kind"`
	Target string        `json:"target"`
	Detail string        `json:"detail,omitempty"`
	For    time.Duration `json:"for"`
}

func (f Fault) String() string {
	s := fmt.Sprintf("%7.1fs  %-10s %-10s", f.At.Seconds(), f.Kind, f.Target)
	if f.Detail != "" {
		s += " " + f.Detail
	}
	return s + fmt.Sprintf(" for %.1fs", f.For.Seconds())
}

// telemetryPath are the processes of the telemetry path (run.go): the
// rule stand-in, the consumer and the IoT data endpoint.
var telemetryPath = []string{procRules, procConsume, procEndpoint}

// Schedule draws n faults over window from seed; the same inputs give the
// same schedule. Kill targets are the named processes of the run. A
// schedule of at least 10 faults starts with one kill of each part of the
// telemetry path at a drawn time, so every run, the quick one too, loses
// each of them once; the other kills may hit them again.
func Schedule(seed uint64, n int, window time.Duration, gateways, ingests, workers int) []Fault {
	r := rand.New(rand.NewPCG(seed, 0xb0771e))
	var procs []string
	for i := range gateways {
		procs = append(procs, fmt.Sprintf("edge-%d", i))
	}
	for i := range ingests {
		procs = append(procs, fmt.Sprintf("ingest-%d", i))
	}
	for i := range workers {
		procs = append(procs, fmt.Sprintf("worker-%d", i))
	}
	procs = append(procs, "relay", "api")
	procs = append(procs, telemetryPath...)
	links := []string{"dynamodb", "sqs", "kinesis", "mqtt"}
	toxics := []string{"latency", "reset_peer", "timeout"}
	providers := []string{"shopify", "shipping", "notify"}
	secs := func(lo, hi float64) time.Duration {
		return time.Duration((lo + r.Float64()*(hi-lo)) * float64(time.Second))
	}
	out := make([]Fault, 0, n)
	if n >= 10 {
		for _, p := range telemetryPath {
			out = append(out, Fault{At: time.Duration(r.Int64N(int64(window))), Kind: FaultKill, Target: p, For: secs(0.5, 4)})
		}
	}
	for len(out) < n {
		f := Fault{At: time.Duration(r.Int64N(int64(window)))}
		switch k := r.IntN(100); {
		case k < 35:
			f.Kind, f.Target, f.For = FaultKill, procs[r.IntN(len(procs))], secs(0.5, 4)
		case k < 42:
			f.Kind, f.Target, f.For = FaultBroker, "mosquitto", secs(1, 5)
		case k < 62:
			f.Kind, f.Target, f.Detail, f.For = FaultNet, links[r.IntN(len(links))], toxics[r.IntN(len(toxics))], secs(1, 5)
		case k < 75:
			f.Kind, f.Target, f.For = FaultThrottle, []string{"dynamodb", "kinesis"}[r.IntN(2)], secs(2, 6)
		case k < 90:
			f.Kind, f.Target, f.Detail, f.For = FaultProvider, providers[r.IntN(len(providers))], []string{"5xx", "hang"}[r.IntN(2)], secs(1, 6)
		case k < 95:
			f.Kind, f.Target, f.For = FaultPowerCut, fmt.Sprintf("edge-%d", r.IntN(gateways)), secs(0.5, 3)
		default:
			f.Kind, f.Target = FaultBadWebhook, "api"
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b Fault) int { return int(a.At - b.At) })
	return out
}

// PrintTimeline writes the schedule, one fault a line.
func PrintTimeline(w io.Writer, seed uint64, faults []Fault) {
	fmt.Fprintf(w, "fault schedule (seed %d, %d faults):\n", seed, len(faults))
	for _, f := range faults {
		fmt.Fprintln(w, "  "+f.String())
	}
}
