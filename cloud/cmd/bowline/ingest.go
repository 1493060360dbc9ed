package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runIngest(ctx context.Context, args []string) error { return ingestCmd(ctx, args, os.Stdout) }

func ingestCmd(ctx context.Context, args []string, stdout io.Writer) error {
	spec := eventsource.EventsConsumer
	fs := cli.NewFlags("bowline ingest", "the events consumer behind the Kinesis events stream",
		"bowline ingest [--gap-grace 2m] [--poll 1s] [--shard-refresh 5s] [--invoke-timeout 60s] [--metrics-addr host:port]\n\n"+
			"Gateways publish bowl events by AWS IoT Basic Ingest to the events rule, which puts each\n"+
			"into the events stream (record format 2, partition key = tenant; `bowline rules` locally).\n"+
			"The handler is cloud/ingest: it checks every event's thing against the device registry\n"+
			"and the topic's tenant, validates it, emits it once per (thing, id), writes its seq to\n"+
			"the thing's seq row and raises bowl.data_gap for a hole open past --gap-grace. Rejected\n"+
			"events are dead-lettered (unregistered bowls quarantined for replay); a batch is done only\n"+
			"when every event in it is emitted or dead-lettered, and an infrastructure error hands the\n"+
			"record back to the event source, which retries it (docs/events-path.md).\n\n"+
			"Locally, runs the stand-in of Lambda's Kinesis event source mapping (cloud/eventsource,\n"+
			fmt.Sprintf("mapping %q: batches of up to %d records, %d batches in flight per shard ordered per\n", spec.Name, spec.BatchSize, spec.ParallelizationFactor)+
			"tenant, parents before children, bisect on error, retried until they succeed or reach the\n"+
			"stream's retention, then described on events-consumer-dlq) with checkpoints in the inbox\n"+
			"table (ESM# rows). Inside Lambda (AWS_LAMBDA_RUNTIME_API set) it serves the function\n"+
			"instead: the mapping is AWS's, and the flags but --gap-grace are ignored.\n\n"+
			"Environment: BOWLINE_STACK and the standard AWS SDK variables.")
	gapGrace := fs.Duration("gap-grace", 2*time.Minute, "how long a missing range of event seqs may stay open before bowl.data_gap")
	poll := fs.Duration("poll", time.Second, "pause after an empty read of an open shard (at least 200ms: five reads per second per shard)")
	refresh := fs.Duration("shard-refresh", 5*time.Second, "how often the shard list is read again to find child shards")
	invokeTimeout := fs.Duration("invoke-timeout", 60*time.Second, "deadline of each handler call (the function's timeout in AWS)")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics on this address (off when empty)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *gapGrace <= 0 {
		return fmt.Errorf("%w: --gap-grace %v: want a positive duration", cli.ErrUsage, *gapGrace)
	}
	if *poll < 200*time.Millisecond || *refresh <= 0 || *invokeTimeout <= 0 {
		return fmt.Errorf("%w: --poll %v, --shard-refresh %v, --invoke-timeout %v: want --poll >= 200ms and positive durations", cli.ErrUsage, *poll, *refresh, *invokeTimeout)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	reg := app.NewRegistry()
	stack, err := openApp(ctx, log, reg)
	if err != nil {
		return err
	}
	defer stack.Close()
	in, err := stack.Ingest(ingest.Config{GapGrace: *gapGrace, Logger: log})
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	handler := app.IngestHandler(in)
	go in.Run(ctx) // gaps fall due between batches too
	if os.Getenv(eventsource.RuntimeAPIEnv) != "" {
		eventsource.StartLambda(handler) // returns only when the runtime ends the process
		return nil
	}
	r, err := stack.EventsSource(ctx, handler, func(c *eventsource.Config) {
		c.PollInterval, c.ShardRefresh, c.InvokeTimeout = *poll, *refresh, *invokeTimeout
	})
	if err != nil {
		return err
	}
	if *metricsAddr != "" {
		if err := serveMetrics(ctx, *metricsAddr, reg, log); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "bowline ingest: %s on %s (stack %s)\n", spec.Name, stack.Names.EventsStream(), stack.Names.Stack)
	return r.Run(ctx)
}
