// Command fleet is the fleet section of scripts/bench: 10,000 light
// simulated gateways on one machine against Debian's Mosquitto, through
// the topic rules' stand-in, Kinesis and the telemetry consumer, with the
// acks going back to every gateway (docs/telemetry-path.md, "Fleet
// bench"). It reports what was sent, acknowledged and lost, the
// consumer's lag and the memory, descriptors and CPU of each part.
//
// Proving ground: a measurement of the product, never linked into it
// (docs/README.md, "The proving ground").
//
//	go run ./cloud/bench/fleet [--gateways 10000] [--duration 10m] [--json]
//
// The gateways run in a second process of this program (so that the
// consumer's memory is its own) and the broker in its own; both need a
// descriptor per gateway, so the program raises RLIMIT_NOFILE to its hard
// limit and refuses a fleet that does not fit. It writes .bench/fleet.txt
// and .bench/fleet.json.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/bowline-iot/bowline/cloud/rules"
)

// config is one run's shape.
type config struct {
	Gateways        int
	BowlsPerGateway float64
	Duration        time.Duration
	Interval        time.Duration
	AckEvery        time.Duration
	AckTimeout      time.Duration
	Drain           time.Duration
	SampleHz        float64
	Shards          int
	// RulesInFlight is the rules stand-in's MaxInFlight and Mosquitto's
	// max_inflight_messages.
	RulesInFlight int
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if js := os.Getenv(fleetEnv); js != "" {
		os.Exit(fleetMain(js, log))
	}
	fs := flag.NewFlagSet("bench fleet", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "bench fleet: light simulated gateways against Debian's Mosquitto, through the rules stand-in, Kinesis and the consumer; acked samples lost (must be 0), acks per gateway, consumer lag, memory, fds and CPU per part\n\nUsage: go run ./cloud/bench/fleet [flags]\n\nFlags:")
		fs.PrintDefaults()
	}
	var cfg config
	fs.IntVar(&cfg.Gateways, "gateways", 10000, "simulated gateways, one MQTT connection each")
	fs.Float64Var(&cfg.BowlsPerGateway, "bowls-per-gateway", 1.5, "bowls per gateway on average (1.5: alternately 1 and 2)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Minute, "how long the gateways publish")
	fs.DurationVar(&cfg.Interval, "interval", time.Minute, "time between a gateway's batches (the gateways' phases are spread across it)")
	fs.DurationVar(&cfg.AckEvery, "ack-every", 2*time.Minute, "the consumer's AckEvery: the longest a gateway waits for an ack of new durable seqs")
	fs.DurationVar(&cfg.AckTimeout, "ack-timeout", 0, "how long a gateway waits for an ack before it sends a batch again (default 2 x ack-every + 30s)")
	fs.DurationVar(&cfg.Drain, "drain", 0, "after the last batch, how long to wait at most for the last acks (default ack-every + 1m)")
	fs.Float64Var(&cfg.SampleHz, "sample-hz", 50, "each bowl's sample rate (weight_g)")
	fs.IntVar(&cfg.Shards, "shards", 16, "shards of the telemetry stream (at least 4; kinesis-local's PutRecords costs grow with the records already in a shard, docs/telemetry-path.md)")
	fs.IntVar(&cfg.RulesInFlight, "rules-in-flight", rules.DefaultMaxInFlight, "messages the rules stand-in takes before their records are in the stream (its MaxInFlight, and Mosquitto's max_inflight_messages, so the broker holds the rest)")
	out := fs.String("out", ".bench", "folder for fleet.txt and fleet.json (empty: none)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	verbose := fs.Bool("v", false, "log the parts' info messages")
	cpuProfile := fs.String("cpuprofile", "", "write this process's CPU profile (the cloud side) to this file")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if cfg.AckTimeout == 0 {
		cfg.AckTimeout = 2*cfg.AckEvery + 30*time.Second
	}
	if cfg.Drain == 0 {
		cfg.Drain = cfg.AckEvery + time.Minute
	}
	if cfg.Gateways < 1 || cfg.BowlsPerGateway < 1 || cfg.Duration <= 0 || cfg.Interval <= 0 || cfg.AckEvery <= 0 || cfg.SampleHz <= 0 || cfg.Shards < 4 || cfg.RulesInFlight < 1 {
		fmt.Fprintln(os.Stderr, "bench fleet: --gateways, --duration, --interval, --ack-every, --sample-hz and --rules-in-flight must be positive, --bowls-per-gateway at least 1, --shards at least 4")
		os.Exit(2)
	}
	if *verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	limit, err := raiseFileLimit(cfg.Gateways)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench fleet:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench fleet:", err)
			os.Exit(2)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	r, err := measure(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench fleet:", err)
		os.Exit(1)
	}
	r.FileLimit = limit
	var text bytes.Buffer
	printReport(&text, r)
	js, _ := json.MarshalIndent(r, "", "  ")
	if *out != "" {
		if err := write(*out, text.Bytes(), js); err != nil {
			fmt.Fprintln(os.Stderr, "bench fleet:", err)
			os.Exit(1)
		}
	}
	var w io.Writer = os.Stdout
	if *asJSON {
		_, _ = w.Write(append(js, '\n'))
	} else {
		_, _ = w.Write(text.Bytes())
	}
	if r.Check.AckedLost > 0 {
		os.Exit(3)
	}
}

// fleetMain is the gateways' process.
func fleetMain(js string, log *slog.Logger) int {
	var cfg fleetConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench fleet gateways:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runFleet(ctx, cfg, log.With("part", "gateways")); err != nil {
		fmt.Fprintln(os.Stderr, "bench fleet gateways:", err)
		return 1
	}
	return 0
}

// raiseFileLimit sets RLIMIT_NOFILE's soft limit to the hard one. Setting
// it explicitly (not only Go's own raise at start-up) makes the children,
// Mosquitto and the gateways' process, inherit it. It fails when the hard
// limit cannot hold a descriptor per gateway and some to spare.
func raiseFileLimit(gateways int) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("getrlimit: %w", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("setrlimit RLIMIT_NOFILE %d: %w", lim.Max, err)
	}
	if need := uint64(gateways) + 1024; lim.Cur < need {
		return lim.Cur, fmt.Errorf("RLIMIT_NOFILE is %d (hard limit), %d gateways need about %d: raise the hard limit (ulimit -Hn, limits.conf) or run fewer", lim.Cur, gateways, need)
	}
	return lim.Cur, nil
}

func write(dir string, text, js []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.txt"), text, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "fleet.json"), append(js, '\n'), 0o644)
}
