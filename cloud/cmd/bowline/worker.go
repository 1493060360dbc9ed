package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/recordchange"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/cli"
	"github.com/bowline-iot/bowline/internal/resources"
)

// subscriberHandlers is the worker's registry: handlers bound by
// subscription name to the catalog (catalog.Bind), for the DURABLE and
// BEST_EFFORT lanes. Until the real subscribers exist (issue 7) every such
// subscription gets loggingHandler; plug subscribers in by replacing this
// function or adding entries to the map it returns.
var subscriberHandlers = func(log *slog.Logger) map[string]engine.Handler {
	hs := map[string]engine.Handler{}
	for _, s := range catalog.Bowline().Subscriptions {
		if s.Lane == engine.Durable || s.Lane == engine.BestEffort {
			hs[s.Name] = loggingHandler(log, s.Name)
		}
	}
	return hs
}

func loggingHandler(log *slog.Logger, sub string) engine.Handler {
	return func(ctx context.Context, env engine.Envelope) error {
		log.Info("event", "subscription", sub, "event_id", env.ID, "type", env.Type, "tenant", env.Tenant, "seq", env.Seq)
		return nil
	}
}

func runWorker(ctx context.Context, args []string) error { return workerCmd(ctx, args, os.Stdout) }

func workerCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline worker", "run DURABLE subscriptions from events.fifo (and BEST_EFFORT ones from record-changes)",
		"bowline worker [--pollers N] [--lease 30s] [--wait 10s] [--retry-delay 0s] [--record-changes] [--metrics-addr host:port]\n\n"+
			"Each event's matching DURABLE subscriptions run through the inbox (claim, handler,\n"+
			"complete); retryable errors are left to SQS, terminal ones and failures on the last\n"+
			"receive are dead-lettered. Environment: BOWLINE_STACK and the standard AWS SDK variables.")
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
	names, err := resources.FromEnv()
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	bound, err := catalog.Bind(catalog.Bowline(), subscriberHandlers(log))
	if err != nil {
		return fmt.Errorf("bind subscribers: %w", err)
	}
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	w, err := worker.ForStack(ctx, cfg, names, bound.Subscriptions, func(c *worker.Config) {
		c.Declared = bound.Declared
		c.Pollers, c.Lease, c.WaitTime, c.RetryDelay = *pollers, *lease, *wait, *retryDelay
		c.Logger, c.Observer = log, worker.NewMetrics(reg)
	})
	if err != nil {
		return err
	}
	var rc *recordchange.Consumer
	if *recordChanges {
		rc, err = recordchange.ForStack(ctx, cfg, names, bound.Subscriptions, func(c *recordchange.Config) {
			c.WaitTime, c.Logger, c.Metrics = *wait, log, recordchange.NewMetrics(reg)
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
	fmt.Fprintf(stdout, "bowline worker %s on %s (stack %s)\n", w.ID(), names.EventsQueue(), names.Stack)
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() { werr = w.Run(ctx) })
	if rc != nil {
		wg.Go(func() { _ = rc.Run(ctx) })
	}
	wg.Wait()
	return werr
}
