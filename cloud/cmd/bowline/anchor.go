package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/anchor"
	"github.com/bowline-iot/bowline/internal/cli"
)

// anchorSummary is the one-line description of `bowline anchor`.
const anchorSummary = "record every tenant's verified chain position in the anchors table"

func runAnchor(ctx context.Context, args []string) error { return anchorCmd(ctx, args, os.Stdout) }

// anchorCmd runs `bowline anchor`: a round over every tenant (verify the
// chain from its newest anchor, anchor the new position), once or every
// interval until ctx ends. SIGINT/SIGTERM stop it at once, and a round cut
// short loses nothing: anchors are single conditional puts, and the next
// round goes on from the newest. With --once it fails with errChainBroken
// when a chain is broken.
func anchorCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline anchor", anchorSummary,
		"bowline anchor (--once | --every 5m) [--json] [--metrics-addr host:port]\n\n"+
			"Each round lists the tenants (the anchors table's registry and the events table's\n"+
			"heads index, without reading the log), reads every head and the anchor at its seq in\n"+
			"batches, and for each tenant that changed verifies its chain from its newest anchor\n"+
			"and, if intact and longer, appends an anchor (seq, hash) to the\n"+
			"anchors table with a conditional put: anchors are never overwritten, so the history\n"+
			"is kept. A broken chain is logged and not anchored. `bowline verify-chain` checks\n"+
			"every chain against its anchors. In AWS only the AnchorRole may write the anchors\n"+
			"table (docs/chain.md). Environment: BOWLINE_STACK and the standard AWS SDK variables.")
	once := fs.Bool("once", false, "run one round and exit (status 1 if a chain is broken)")
	every := fs.Duration("every", 0, "run a round at this interval until stopped, e.g. 5m")
	asJSON := fs.Bool("json", false, "print each round's report as one JSON line")
	pageSize := fs.Int("page-size", 500, "events read per query page")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics on this address (off when empty)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	case *once == (*every != 0):
		return fmt.Errorf("%w: give --once or --every (exactly one)", cli.ErrUsage)
	case *every < 0 || (*every > 0 && *every < time.Second):
		return fmt.Errorf("%w: --every %v: want 1s or more", cli.ErrUsage, *every)
	case *pageSize < 1 || *pageSize > 10000:
		return fmt.Errorf("%w: --page-size %d: want 1 to 10000", cli.ErrUsage, *pageSize)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	reg := app.NewRegistry()
	stack, err := openApp(ctx, log, reg)
	if err != nil {
		return err
	}
	defer stack.Close()
	ledger, err := stack.Anchor(anchor.Config{
		Logger: log, Chains: engine.NewVerifier(stack.DynamoDB, stack.Names.EventsTable(), int32(*pageSize)),
	})
	if err != nil {
		return err
	}
	if *metricsAddr != "" {
		if err := serveMetrics(ctx, *metricsAddr, reg, log); err != nil {
			return err
		}
	}
	round := func() (anchor.RoundReport, error) {
		rep, err := ledger.Round(ctx)
		if err != nil {
			return rep, err
		}
		log.Info("anchor round", "tenants", rep.Tenants, "anchored", rep.Anchored, "unchanged", rep.Unchanged,
			"broken", len(rep.Broken), "failed", len(rep.Failed), "elapsed", rep.Elapsed)
		if *asJSON {
			line, err := json.Marshal(rep)
			if err != nil {
				return rep, fmt.Errorf("write json: %w", err)
			}
			fmt.Fprintf(stdout, "%s\n", line)
		} else {
			fmt.Fprintf(stdout, "anchored %d of %d tenants (%d unchanged, %d broken, %d failed)\n",
				rep.Anchored, rep.Tenants, rep.Unchanged, len(rep.Broken), len(rep.Failed))
			for _, b := range rep.Broken {
				fmt.Fprintf(stdout, "%s: BROKEN at seq %d: %s: %s\n", b.Tenant, b.FirstBadSeq, b.Reason, b.Detail)
			}
		}
		return rep, nil
	}
	if *once {
		rep, err := round()
		switch {
		case err != nil:
			return err
		case len(rep.Broken) > 0:
			return fmt.Errorf("%w: %d of %d tenants", errChainBroken, len(rep.Broken), rep.Tenants)
		case len(rep.Failed) > 0:
			return fmt.Errorf("anchor: %d of %d tenants failed (see the log)", len(rep.Failed), rep.Tenants)
		}
		return nil
	}
	log.Info("bowline anchor: running", "stack", stack.Names.Stack, "every", *every)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for {
		if _, err := round(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error("anchor round failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
