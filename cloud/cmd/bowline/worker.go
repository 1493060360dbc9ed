package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/app"

	"github.com/bowline-iot/bowline/engine/recordchange"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runWorker(ctx context.Context, args []string) error { return workerCmd(ctx, args, os.Stdout) }

func workerCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline worker", "run DURABLE subscriptions from events.fifo (and BEST_EFFORT ones from record-changes)",
		"bowline worker [--pollers N] [--lease 30s] [--wait 10s] [--retry-delay 0s] [--record-changes] [--metrics-addr host:port]\n\n"+
			"Each event's matching DURABLE subscriptions run through the inbox (claim, handler,\n"+
			"complete); retryable errors are left to SQS, terminal ones and failures on the last\n"+
			"receive are dead-lettered. Environment: BOWLINE_STACK and the standard AWS SDK\n"+
			"variables.")
	pollers := fs.Int("pollers", 1, "concurrent receive loops on events.fifo")
	lease := fs.Duration("lease", 30*time.Second, "inbox lease; must be shorter than the queue's visibility timeout")
	wait := fs.Duration("wait", 10*time.Second, "long-poll wait (max 20s)")
	retryDelay := fs.Duration("retry-delay", 0, "visibility after a retryable failure (0: the queue's own)")
	recordChanges := fs.Bool("record-changes", true, "also consume record-changes for BEST_EFFORT subscriptions")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics on this address (off when empty)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	reg := app.NewRegistry()
	stack, err := openApp(ctx, log, reg)
	if err != nil {
		return err
	}
	defer stack.Close()
	names := stack.Names
	// The cloud subscribers call the providers at BOWLINE_SHOPIFY_URL,
	// BOWLINE_SHIPPING_URL and BOWLINE_NOTIFY_URL.
	set, err := stack.Subscribers(adapters.ConfigFromEnv(), nil)
	if err != nil {
		return fmt.Errorf("cloud subscribers: %w", err)
	}
	bound, err := app.Bind(set, log, nil)
	if err != nil {
		return fmt.Errorf("bind subscribers: %w", err)
	}
	w, err := stack.Worker(ctx, bound, func(c *worker.Config) {
		c.Pollers, c.Lease, c.WaitTime, c.RetryDelay = *pollers, *lease, *wait, *retryDelay
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bowline worker %s on %s (stack %s)\n", w.ID(), names.EventsQueue(), names.Stack)
	var rc *recordchange.Consumer
	if *recordChanges {
		rc, err = stack.RecordChanges(ctx, bound, func(c *recordchange.Config) {
			c.WaitTime = *wait
		})
		if err != nil {
			return err
		}
	}
	if *metricsAddr != "" {
		if err := serveMetrics(ctx, *metricsAddr, reg, log); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() { werr = w.Run(ctx) })
	if rc != nil {
		wg.Go(func() { _ = rc.Run(ctx) })
	}
	wg.Wait()
	return werr
}
