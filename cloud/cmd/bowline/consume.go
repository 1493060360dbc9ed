package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runConsume(ctx context.Context, args []string) error { return consumeCmd(ctx, args, os.Stdout) }

func consumeCmd(ctx context.Context, args []string, stdout io.Writer) error {
	spec := eventsource.TelemetryConsumer
	def := durable.DefaultConfig()
	fs := cli.NewFlags("bowline consume", "the telemetry consumer behind the Kinesis telemetry stream",
		fmt.Sprintf("bowline consume [--ack-every %v] [--gap-grace %v] [--rollup-every %v] [--iot-endpoint URL]\n", def.AckEvery, def.GapGrace, def.RollupEvery)+
			"                [--poll 1s] [--shard-refresh 5s] [--invoke-timeout 60s]\n\n"+
			"The handler is cloud/durable: it decodes each record (format 2: a binary batch or a v1\n"+
			"message), checks every thing against the device registry and the record's tenant and\n"+
			"gateway, tracks the seq spans each gateway has in the stream, publishes their\n"+
			"acknowledgement to cmd/bowline/<tenant>/<gateway>/ack over the IoT data plane's HTTPS\n"+
			"Publish, raises bowl.data_gap for a hole open past its grace and writes per-bowl rollups\n"+
			"for the console (docs/telemetry-path.md).\n\n"+
			"Locally, runs the stand-in of Lambda's Kinesis event source mapping (cloud/eventsource,\n"+
			fmt.Sprintf("mapping %q: batches of up to %d records, %ds batching window, %d batches in flight\n", spec.Name, spec.BatchSize, spec.MaximumBatchingWindowInSeconds, spec.ParallelizationFactor)+
			"per shard ordered per partition key, parents before children, bisect on error, partial\n"+
			fmt.Sprintf("failures retried from the failed record, %d retries or %dh of age, then the batch is\n", spec.MaximumRetryAttempts, spec.MaximumRecordAgeInSeconds/3600)+
			"described on telemetry-consumer-dlq) with checkpoints in the inbox table (ESM# rows).\n"+
			"Inside Lambda (AWS_LAMBDA_RUNTIME_API set) it serves the function instead: the mapping\n"+
			"is AWS's, and the flags are ignored.\n\n"+
			"Environment: BOWLINE_STACK, AWS_ENDPOINT_URL_IOT_DATA_PLANE (acks) and the standard AWS SDK variables.")
	poll := fs.Duration("poll", time.Second, "pause after an empty read of an open shard (at least 200ms: five reads per second per shard)")
	refresh := fs.Duration("shard-refresh", 5*time.Second, "how often the shard list is read again to find child shards")
	invokeTimeout := fs.Duration("invoke-timeout", 60*time.Second, "deadline of each handler call (the function's timeout in AWS)")
	ackEvery := fs.Duration("ack-every", def.AckEvery, "shortest time between two acknowledgements to one gateway, and the longest it waits for one; gateways resend after their ack_timeout (default "+wire.DefaultAckTimeout.String()+"), which must be longer by a batch interval, and the difference is how far this consumer may lag before they do; fewer acks cost less (docs/cost.md)")
	gapGrace := fs.Duration("gap-grace", def.GapGrace, fmt.Sprintf("how long a hole may stay open before bowl.data_gap is raised, on the gateway's clock counting only time it was sending (a silence counts as at most a twenty-fourth of this: an offline gateway cannot resend); at least twice the gateways' ack_timeout (default %v) and a few batch intervals, so a batch whose resend is lost too is not reported: the event cannot be taken back", wire.DefaultAckTimeout))
	rollupEvery := fs.Duration("rollup-every", def.RollupEvery, "length of a rollup window: a bowl's minutes of a window are written once, as one row, 5 min after it ends; divides an hour (0: every batch)")
	iotEndpoint := fs.String("iot-endpoint", "", "the IoT data plane endpoint acks are published to (default $AWS_ENDPOINT_URL_IOT_DATA_PLANE)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *ackEvery <= 0 || *gapGrace <= 0 || *rollupEvery < 0 {
		return fmt.Errorf("%w: --ack-every %v, --gap-grace %v, --rollup-every %v: want positive durations (--rollup-every may be 0)", cli.ErrUsage, *ackEvery, *gapGrace, *rollupEvery)
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
	pub, err := stack.IoTPublisher(*iotEndpoint)
	if err != nil {
		return err
	}
	cfg := def
	cfg.AckEvery, cfg.GapGrace, cfg.RollupEvery = *ackEvery, *gapGrace, *rollupEvery
	consumer, err := stack.TelemetryConsumer(cfg, pub)
	if err != nil {
		return err
	}
	handler := app.TelemetryHandler(consumer)
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
	fmt.Fprintf(stdout, "bowline consume: %s on %s (stack %s)\n", spec.Name, stack.Names.TelemetryStream(), stack.Names.Stack)
	// A quiet gateway's due ack must not wait for its next record.
	go consumer.FlushEvery(ctx, *ackEvery/2)
	err = r.Run(ctx)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	consumer.Flush(fctx)
	return err
}
