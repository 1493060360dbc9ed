// Command chaos is ./scripts/chaos: the whole Bowline system as separate
// processes under a seeded fault schedule (cloud/chaos, docs/chaos.md),
// run once with Bowline's inbox and once with the seed article's
// (its workers are cloud/bench/chaos/seedworker) for a side-by-side table.
//
// Proving ground: the chaos harness, never linked into a product; it
// builds and runs the product binaries, and its own seedworker for the
// seed column (docs/README.md, "The proving ground").
//
//	go run ./cloud/bench/chaos [--seed N] [--quick] [--inbox bowline,seed] [--out .bench] [--json]
//
// It starts its own emulators and Mosquitto, so it needs ./scripts/setup
// and nothing else. It exits 1 when an invariant of the Bowline run fails
// (the seed run is a baseline and is expected to fail some).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bowline-iot/bowline/cloud/chaos"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func run() error {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "chaos: the whole system as processes under a seeded fault schedule (docs/chaos.md)\n\n"+
			"usage: go run ./cloud/bench/chaos [--seed N] [--quick] [--inbox bowline,seed] [--out .bench] [--json] [--keep]\n\n")
		fs.PrintDefaults()
	}
	seed := fs.Uint64("seed", 1, "seed of the fault schedule and the bowls' readings; the same seed gives the same schedule")
	quick := fs.Bool("quick", false, "the small run of ./scripts/test (2 bowls, 30 orders, 14 faults)")
	inboxes := fs.String("inbox", "bowline,seed", "comma-separated worker inbox modes to run with the same schedule: bowline (bowline worker), seed (the harness's seedworker: the seed article's inbox)")
	out := fs.String("out", ".bench", "directory for chaos-<seed>.txt and .json")
	faults := fs.Int("faults", 0, "number of faults (0: 60, or 14 with --quick)")
	orders := fs.Int("orders", 0, "paid orders (0: 500, or 30 with --quick)")
	deviceFaults := fs.Int("device-faults", 0, "firmware faults each bowl raises (0: 210, or 5 with --quick)")
	asJSON := fs.Bool("json", false, "print the JSON report instead of the table")
	verbose := fs.Bool("v", false, "log progress of the parts to stderr")
	keep := fs.Bool("keep", false, "keep the work directory (process logs, outboxes, truth) for a post-mortem")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	cfg := chaos.Default()
	if *quick {
		cfg = chaos.Quick()
	}
	cfg.Seed, cfg.Inboxes, cfg.Keep = *seed, strings.Split(*inboxes, ","), *keep
	if *faults > 0 {
		cfg.Faults = *faults
	}
	if *orders > 0 {
		cfg.Orders = *orders
	}
	if *deviceFaults > 0 {
		cfg.DeviceFaults = *deviceFaults
	}
	// The binaries are built from the repository the program runs in;
	// the emulators come from $BOWLINE_ROOT when it names another
	// checkout (a worktree has no deploy/local installed).
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	cfg.Root, cfg.StackRoot = wd, os.Getenv("BOWLINE_ROOT")
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	rep, err := chaos.Run(ctx, cfg, os.Stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	base := filepath.Join(*out, fmt.Sprintf("chaos-%d", *seed))
	jf, err := os.Create(base + ".json")
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(jf); err != nil {
		return err
	}
	jf.Close()
	tf, err := os.Create(base + ".txt")
	if err != nil {
		return err
	}
	rep.WriteTable(tf)
	tf.Close()
	if *asJSON {
		_ = rep.WriteJSON(os.Stdout)
	} else {
		rep.WriteTable(os.Stdout)
	}
	fmt.Printf("total %v; saved %s.txt and %s.json\n", time.Since(began).Round(time.Second), base, base)
	if !rep.OK() {
		return errors.New("an invariant of the Bowline run failed (see above)")
	}
	return nil
}
