// Command seedworker is the worker of a chaos run's seed column: the seed
// article's inbox (engine/inbox/seedinbox) on events.fifo, running
// Bowline's subscribers, which cloud/chaos starts in place of `bowline
// worker` when it runs the seed mode (docs/chaos.md, "The seed baseline").
//
// Proving ground: a baseline that chaos measures Bowline's worker against,
// never a product command. The product's `bowline worker` has no seed
// mode, so the bowline binary does not link the seed inbox
// (docs/README.md, "The proving ground").
//
//	go build -o seedworker ./cloud/bench/chaos/seedworker
//	seedworker [--wait 10s] [--record-changes=true]
//
// Environment: as `bowline worker`: BOWLINE_STACK, the AWS SDK variables
// and the providers' BOWLINE_SHOPIFY_URL, BOWLINE_SHIPPING_URL and
// BOWLINE_NOTIFY_URL.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/inbox/seedinbox"
	"github.com/bowline-iot/bowline/engine/recordchange"
	"github.com/bowline-iot/bowline/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, cli.ErrUsage):
		fmt.Fprintln(os.Stderr, "seedworker:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "seedworker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("seedworker", "the seed article's inbox on events.fifo: the baseline of ./scripts/chaos",
		"seedworker [--wait 10s] [--record-changes=true]\n\n"+
			"Runs the DURABLE subscriptions from events.fifo through the seed article's inbox\n"+
			"(engine/inbox/seedinbox), and the BEST_EFFORT ones from record-changes as `bowline\n"+
			"worker` does. It loses a run to a crash between claim and complete and kills work on\n"+
			"its first error: a baseline for ./scripts/chaos only (docs/chaos.md), never for real\n"+
			"work. Environment: BOWLINE_STACK, the standard AWS SDK variables and the providers'\n"+
			"BOWLINE_SHOPIFY_URL, BOWLINE_SHIPPING_URL and BOWLINE_NOTIFY_URL.")
	wait := fs.Duration("wait", 10*time.Second, "long-poll wait (max 20s)")
	recordChanges := fs.Bool("record-changes", true, "also consume record-changes for BEST_EFFORT subscriptions")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	stack, err := app.FromEnv(ctx, app.PartWorker, log, nil)
	var ce *app.ConfigError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	if err != nil {
		return err
	}
	defer stack.Close()
	set, err := stack.Subscribers(adapters.ConfigFromEnv(), nil)
	if err != nil {
		return fmt.Errorf("cloud subscribers: %w", err)
	}
	bound, err := app.Bind(set, log, nil)
	if err != nil {
		return fmt.Errorf("bind subscribers: %w", err)
	}
	c, err := consumer(ctx, stack, bound, *wait)
	if err != nil {
		return err
	}
	var rc *recordchange.Consumer
	if *recordChanges {
		if rc, err = stack.RecordChanges(ctx, bound, func(c *recordchange.Config) { c.WaitTime = *wait }); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "seedworker (seed inbox, baseline only) on %s (stack %s)\n", stack.Names.EventsQueue(), stack.Names.Stack)
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() { werr = c.Run(ctx) })
	if rc != nil {
		wg.Go(func() { _ = rc.Run(ctx) })
	}
	wg.Wait()
	return werr
}

// consumer builds the seed article's durable consumer on events.fifo, the
// inbox table and dead_letters, with the stack's clients.
func consumer(ctx context.Context, a *app.App, bound engine.Catalog, wait time.Duration) (*seedinbox.Consumer, error) {
	queue, err := a.QueueURL(ctx, a.Names.EventsQueue())
	if err != nil {
		return nil, fmt.Errorf("seed worker: %w", err)
	}
	store, err := seedinbox.NewStore(a.DynamoDB, a.Names.InboxTable(), nil)
	if err != nil {
		return nil, fmt.Errorf("seed worker: %w", err)
	}
	return seedinbox.New(seedinbox.Config{
		Queue: a.SQS, QueueURL: queue, Store: store, DeadLetters: a.DeadLetters,
		Subscriptions: bound.Subscriptions, WaitTime: wait, Logger: a.Logger,
	})
}
