package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"

	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runRelay(ctx context.Context, args []string) error { return relayCmd(ctx, args, os.Stdout) }

func relayCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline relay", "DynamoDB Streams -> SQS, the local stand-in for the EventBridge Pipes",
		"bowline relay [--pipes events,record-changes] [--poll 250ms] [--metrics-addr host:port]\n\n"+
			"The events pipe forwards INSERT records of event rows from the events table's stream to\n"+
			"events.fifo (group = tenant, dedup id = event id), only of the types a DURABLE subscription\n"+
			"matches; the record-changes pipe forwards the app table's records of the entities a\n"+
			"BEST_EFFORT subscription names to record-changes. Positions are checkpointed per shard\n"+
			"in the inbox table. A record SQS refuses 1+10 times, over 256 KiB or older than 23 h is\n"+
			"put on pipes-dlq as a dead letter (metric bowline_relay_dead_letters_total), as the Pipes do.\n"+
			"Environment: BOWLINE_STACK and the standard AWS SDK variables.")
	pipes := fs.String("pipes", "events,record-changes", "comma-separated pipes to run: events, record-changes")
	poll := fs.Duration("poll", 250*time.Millisecond, "pause after an empty read of an open shard")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics on this address (off when empty)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *poll <= 0 {
		return fmt.Errorf("%w: --poll %v: want a positive duration", cli.ErrUsage, *poll)
	}
	var chosen []string
	for _, p := range strings.Split(*pipes, ",") {
		switch p = strings.TrimSpace(p); p {
		case relay.EventsPipe.Name, relay.RecordChangesPipe.Name:
			chosen = append(chosen, p)
		default:
			return fmt.Errorf("%w: --pipes: unknown pipe %q (want events or record-changes)", cli.ErrUsage, p)
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	reg := app.NewRegistry()
	stack, err := openApp(ctx, log, reg)
	if err != nil {
		return err
	}
	defer stack.Close()
	// The filters are the catalog's, as the CloudFormation Pipes' are.
	events, recordChanges, err := stack.Pipes()
	if err != nil {
		return err
	}
	var specs []relay.PipeSpec
	for _, n := range chosen {
		if n == events.Name {
			specs = append(specs, events)
		} else {
			specs = append(specs, recordChanges)
		}
	}
	names := stack.Names
	var relays []*relay.Relay
	for _, spec := range specs {
		r, err := stack.Relay(ctx, spec, func(c *relay.Config) {
			c.PollInterval = *poll
		})
		if err != nil {
			return err
		}
		relays = append(relays, r)
	}
	if *metricsAddr != "" {
		if err := serveMetrics(ctx, *metricsAddr, reg, log); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "bowline relay: %s (stack %s)\n", *pipes, names.Stack)
	errs := make([]error, len(relays))
	var wg sync.WaitGroup
	for i, r := range relays {
		wg.Go(func() { errs[i] = r.Run(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
