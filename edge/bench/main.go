package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const usage = `bench edge: the edge agent beside a mosquitto bridge with persistence, in one run

Usage: go run ./edge/bench [flags]

Phases: durable (in-process sink + outbox, fsync on), live (full speed, cloud
broker up), backlog (cloud broker down: fill, memory, drain), kill (50 Hz x 4
bowls in real time, the cloud broker down for a while, SIGKILL cycles). Needs
mosquitto on PATH (scripts/bench-edge installs it) and the go tool (it builds
./edge/cmd/bowline-edge).

Flags:
`

// params sizes a run.
type params struct {
	Bowls          int           `json:"bowls"`
	DurableFor     time.Duration `json:"-"`
	LiveSamples    int           `json:"live_samples"`
	BacklogSamples int           `json:"backlog_samples"`
	Kills          int           `json:"kills"`
	Warmup         time.Duration `json:"-"`
	Window         int           `json:"publisher_window"`
	// Settle: a subject that has lost samples is done when nothing new
	// arrived at the cloud broker for this long.
	Settle time.Duration `json:"-"`
	Seed   uint64        `json:"seed"`
}

func fullParams(seed uint64) params {
	return params{Bowls: 4, DurableFor: 1500 * time.Millisecond, LiveSamples: 400_000, BacklogSamples: 1_000_000,
		Kills: 20, Warmup: 3 * time.Second, Window: mcuRing, Settle: 5 * time.Second, Seed: seed}
}

func quickParams(seed uint64) params {
	return params{Bowls: 4, DurableFor: 300 * time.Millisecond, LiveSamples: 50_000, BacklogSamples: 200_000,
		Kills: 5, Warmup: time.Second, Window: mcuRing, Settle: 1500 * time.Millisecond, Seed: seed}
}

// result is the --json output.
type result struct {
	Params    params          `json:"params"`
	Mosquitto string          `json:"mosquitto_version"`
	Durable   []durableResult `json:"durable"`
	Live      []liveResult    `json:"live"`
	Backlog   []backlogResult `json:"backlog"`
	Kill      []killResult    `json:"kill"`
	Seconds   float64         `json:"seconds"`
}

func main() {
	fs := flag.NewFlagSet("bench edge", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	asJSON := fs.Bool("json", false, "print the result as JSON")
	quick := fs.Bool("quick", false, "a short run (under ~40 s): smaller backlog and fewer kills")
	seed := fs.Uint64("seed", 1, "seed of the kill schedule")
	keep := fs.Bool("keep", false, "keep the work directory (logs, outbox, mosquitto.db) and print its path")
	verbose := fs.Bool("v", false, "log progress to stderr")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench edge: unexpected argument %q\n", fs.Arg(0))
		os.Exit(2)
	}
	p := fullParams(*seed)
	if *quick {
		p = quickParams(*seed)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "bowline-bench-edge-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench edge:", err)
		os.Exit(1)
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "bench edge: work directory", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	res, err := run(ctx, log, dir, p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench edge:", err)
		if !*keep {
			os.RemoveAll(dir)
		}
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return
	}
	printTables(os.Stdout, res)
}

func run(ctx context.Context, log *slog.Logger, dir string, p params) (result, error) {
	began := time.Now()
	res := result{Params: p}
	mosq, err := exec.LookPath("mosquitto")
	if err != nil {
		return res, ErrNoMosquitto
	}
	res.Mosquitto = mosquittoVersion(mosq)
	bin, err := buildAgent(ctx, dir)
	if err != nil {
		return res, err
	}
	sub := func(name string) (string, error) {
		d := filepath.Join(dir, name)
		return d, os.MkdirAll(d, 0o755)
	}

	for _, recs := range []int{1, 16, 64} {
		log.Info("durable", "records_per_deliver", recs)
		d, err := sub("durable")
		if err != nil {
			return res, err
		}
		r, err := measureDurable(ctx, d, p.Bowls, recs, p.DurableFor)
		if err != nil {
			return res, err
		}
		res.Durable = append(res.Durable, r)
	}

	// Each subject gets its own cloud broker and work directory.
	type maker func(d string, c *cloud, rate float64) (subject, error)
	agentMaker := func(d string, c *cloud, rate float64) (subject, error) {
		return newAgentSubject(bin, d, c.URL, p.Bowls, rate)
	}
	mosqMaker := func(onChange bool) maker {
		return func(d string, c *cloud, _ float64) (subject, error) {
			return newMosquittoSubject(d, c.addr, onChange, p.Bowls, p.Window)
		}
	}
	with := func(name string, mk maker, rate float64, f func(subject, *cloud) error) error {
		d, err := sub(name)
		if err != nil {
			return err
		}
		c, err := startCloud()
		if err != nil {
			return err
		}
		defer c.Close()
		s, err := mk(d, c, rate)
		if err != nil {
			return err
		}
		defer s.Close()
		log.Info("phase", "name", name, "subject", s.Name())
		if err := f(s, c); err != nil {
			return fmt.Errorf("%s, %s: %w", name, s.Name(), err)
		}
		return nil
	}
	// Full speed: the agent's publish rate limit (AWS IoT's 100 msg/s by
	// default) is lifted so the loopback broker, not the limit, is measured.
	const lifted = 1e6
	subjects := []struct {
		name string
		mk   maker
	}{{"agent", agentMaker}, {"mosq-default", mosqMaker(false)}, {"mosq-onchange", mosqMaker(true)}}
	for _, sj := range subjects {
		if err := with("live-"+sj.name, sj.mk, lifted, func(s subject, c *cloud) error {
			r, err := runLive(ctx, s, c, p.Bowls, p.LiveSamples, p.Settle)
			res.Live = append(res.Live, r)
			return err
		}); err != nil {
			return res, err
		}
	}
	for _, sj := range subjects[:2] {
		if err := with("backlog-"+sj.name, sj.mk, lifted, func(s subject, c *cloud) error {
			r, err := runBacklog(ctx, s, c, p.Bowls, p.BacklogSamples, p.Settle)
			res.Backlog = append(res.Backlog, r)
			return err
		}); err != nil {
			return res, err
		}
	}
	plan := newKillPlan(p.Seed, p.Kills, p.Warmup)
	for _, sj := range subjects {
		if err := with("kill-"+sj.name, sj.mk, 0, func(s subject, c *cloud) error {
			r, err := runKill(ctx, s, c, p.Bowls, plan, p.Settle)
			res.Kill = append(res.Kill, r)
			return err
		}); err != nil {
			return res, err
		}
	}
	res.Seconds = time.Since(began).Seconds()
	return res, nil
}

// buildAgent builds ./edge/cmd/bowline-edge into dir.
func buildAgent(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bowline-edge")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./edge/cmd/bowline-edge")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./edge/cmd/bowline-edge in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

// moduleRoot walks up from the working directory to the Bowline go.mod.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/bowline-iot/bowline\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no Bowline go.mod above %s: run go run ./edge/bench from the repository", wd)
		}
	}
}

func mosquittoVersion(bin string) string {
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(strings.TrimPrefix(line, "mosquitto version "))
}
