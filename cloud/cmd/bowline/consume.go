package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runConsume(ctx context.Context, args []string) error { return consumeCmd(ctx, args, os.Stdout) }

func consumeCmd(ctx context.Context, args []string, stdout io.Writer) error {
	spec := eventsource.TelemetryConsumer
	fs := cli.NewFlags("bowline consume", "the telemetry consumer behind the Kinesis telemetry stream",
		"bowline consume [--poll 1s] [--shard-refresh 5s] [--invoke-timeout 60s]\n\n"+
			"Locally, runs the stand-in of Lambda's Kinesis event source mapping (cloud/eventsource,\n"+
			fmt.Sprintf("mapping %q: batches of up to %d records, %ds batching window, %d batches in flight\n", spec.Name, spec.BatchSize, spec.MaximumBatchingWindowInSeconds, spec.ParallelizationFactor)+
			"per shard ordered per partition key, parents before children, bisect on error, partial\n"+
			fmt.Sprintf("failures retried from the failed record, %d retries or %dh of age, then the batch is\n", spec.MaximumRetryAttempts, spec.MaximumRecordAgeInSeconds/3600)+
			"described on telemetry-consumer-dlq) with checkpoints in the inbox table (ESM# rows).\n"+
			"Inside Lambda (AWS_LAMBDA_RUNTIME_API set) it serves the function instead: the mapping\n"+
			"is AWS's, and the flags are ignored.\n\n"+
			"The handler is a STUB until cloud/durable lands: it logs each batch and succeeds,\n"+
			"so nothing is acknowledged yet.\n"+
			"Environment: BOWLINE_STACK, AWS_ENDPOINT_URL_IOT_DATA_PLANE (acks) and the standard AWS SDK variables.")
	poll := fs.Duration("poll", time.Second, "pause after an empty read of an open shard (at least 200ms: five reads per second per shard)")
	refresh := fs.Duration("shard-refresh", 5*time.Second, "how often the shard list is read again to find child shards")
	invokeTimeout := fs.Duration("invoke-timeout", 60*time.Second, "deadline of each handler call (the function's timeout in AWS)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *poll < 200*time.Millisecond || *refresh <= 0 || *invokeTimeout <= 0 {
		return fmt.Errorf("%w: --poll %v, --shard-refresh %v, --invoke-timeout %v: want --poll >= 200ms and positive durations", cli.ErrUsage, *poll, *refresh, *invokeTimeout)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	stack, err := openApp(ctx, log, nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	handler := stack.TelemetryHandler()
	if os.Getenv(eventsource.RuntimeAPIEnv) != "" {
		eventsource.StartLambda(handler) // returns only when the runtime ends the process
		return nil
	}
	r, err := stack.EventSource(ctx, handler, func(c *eventsource.Config) {
		c.PollInterval, c.ShardRefresh, c.InvokeTimeout = *poll, *refresh, *invokeTimeout
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bowline consume: %s on %s (stack %s; handler: stub until cloud/durable lands)\n", spec.Name, stack.Names.TelemetryStream(), stack.Names.Stack)
	return r.Run(ctx)
}
