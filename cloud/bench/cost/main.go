// Command cost is the cost section of scripts/bench: what AWS would bill
// Bowline's data path (telemetry and bowl events), counted from a run. It starts the local stack
// (internal/localstack), runs light simulated gateways that publish one
// batch per minute through Basic Ingest, counts at the broker
// (mqttbroker.Meter), at the rule stand-in, at the consumer (cloud/durable
// behind the event source stand-in, acknowledging over the IoT data
// plane) and from every AWS call (awscalls.Usage); then drives bowl
// events through the events path (ingest's handler, Emit, the Pipes'
// stand-ins, events.fifo, the worker and its subscribers) and adds their
// counts at 8 events per bowl per day; and multiplies the counts, scaled to 10k, 100k, 1M and
// 10M bowls, by the dated price table of internal/pricing. Beside the bill
// it prints every AWS quota the design touches with its load at each
// scale (docs/cost.md).
//
// Proving ground: a measurement of the product, never linked into it
// (docs/README.md, "The proving ground").
//
//	go run ./cloud/bench/cost [--duration 3m] [--gateways 60] [--speed 20] [--ack-every 30m] [--rollup-every 30m] [--events 240] [--json]
//	go run ./cloud/bench/cost --design    # the design's fixed counts, no run
//
// It writes .bench/cost.txt and .bench/cost.json and prints which stages
// were measured; a stage that did not run is printed as not measured.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/pricing"
	"github.com/bowline-iot/bowline/internal/resources"
)

func main() {
	fs := flag.NewFlagSet("bench cost", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "bench cost: what AWS would bill the data path (telemetry and bowl events), counted from a run, at 10k-10M bowls, and the AWS quotas it loads\n\nUsage: go run ./cloud/bench/cost [flags]\n\nFlags:")
		fs.PrintDefaults()
	}
	duration := fs.Duration("duration", 3*time.Minute, "real time the counting lasts (after the warm-up)")
	gateways := fs.Int("gateways", 60, "simulated gateways")
	speed := fs.Float64("speed", 20, "run clock speed: batches and acks come this many times faster than real time")
	def := durable.DefaultConfig()
	batchEvery := fs.Duration("batch-every", wire.DefaultBatchInterval, "gateway: run time between its batches (edge/forward BatchInterval)")
	ackTimeout := fs.Duration("ack-timeout", wire.DefaultAckTimeout, "gateway: run time after which what it sent and was not acknowledged goes again (the gateways' default, wire.DefaultAckTimeout); must exceed --ack-every + --batch-every")
	ackEvery := fs.Duration("ack-every", def.AckEvery, "consumer: shortest run time between two acknowledgements to one gateway (cloud/durable AckEvery)")
	rollupEvery := fs.Duration("rollup-every", def.RollupEvery, "consumer: run time of a rollup window, each bowl's written once as one row (cloud/durable RollupEvery; divides an hour; 0: every call)")
	warmup := fs.Duration("warmup", 0, "run time between the first batches and the start of counting (default --ack-every + --batch-every: every gateway's first ack and first reads are behind)")
	registryTTL := fs.Duration("registry-ttl", def.RegistryTTL, "consumer: how long its device registry cache serves a thing's tenant (cloud/durable RegistryTTL)")
	events := fs.Int("events", 240, "bowl events the events pass drives through the events path after the telemetry run, added to the counts at 8 per bowl per day (0: the events path not measured)")
	sampleHz := fs.Float64("sample-hz", 10, "each bowl's sample rate (weight_g); a batch carries every bowl's samples of its interval")
	kinesisMode := fs.String("kinesis", pricing.Provisioned, "Kinesis capacity mode in the total: provisioned or on-demand")
	peak := fs.Float64("peak", 2, "peak-to-mean factor applied to rate quotas and shard sizing")
	design := fs.Bool("design", false, "no run: estimate from the design's fixed counts (docs/cost.md)")
	out := fs.String("out", ".bench", "folder for cost.txt and cost.json (empty: none)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	verbose := fs.Bool("v", false, "log the stack's lifecycle")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if *gateways < 1 || *duration <= 0 || *speed <= 0 || *batchEvery <= 0 || *ackEvery <= 0 || *sampleHz <= 0 || *rollupEvery < 0 || *events < 0 {
		fmt.Fprintln(os.Stderr, "bench cost: --gateways, --duration, --speed, --batch-every, --ack-every and --sample-hz must be positive, --rollup-every and --events not negative")
		os.Exit(2)
	}
	if *ackTimeout <= *ackEvery+*batchEvery {
		fmt.Fprintf(os.Stderr, "bench cost: --ack-timeout %v must be longer than --ack-every %v + --batch-every %v, or the gateways resend what the consumer has not yet acknowledged\n", *ackTimeout, *ackEvery, *batchEvery)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	model := pricing.Model{Kinesis: *kinesisMode, PeakFactor: *peak, RetentionHours: resources.TelemetryRetentionHours,
		ParallelizationFactor: eventsource.TelemetryConsumer.ParallelizationFactor,
		EventsRetentionHours:  resources.EventsRetentionHours, EventsParallelizationFactor: eventsource.EventsConsumer.ParallelizationFactor}
	var r report
	if *design {
		r = report{Source: "from the design's fixed counts (assumptions, not a measurement)", Counts: designCounts(),
			Run:   "one 2.5 KB batch per gateway per minute via Basic Ingest; one ack per gateway per 10 min, QoS 0, over HTTPS; state written once per ack",
			Notes: []string{"costs from a formula do not count toward the goals: run without --design to measure"}}
	} else {
		dc := durable.DefaultConfig()
		dc.AckEvery, dc.RollupEvery, dc.RegistryTTL = *ackEvery, *rollupEvery, *registryTTL
		consumerStage = newRealConsumer(dc)
		if *warmup <= 0 {
			*warmup = *ackEvery + *batchEvery
		}
		rc := runConfig{Gateways: *gateways, BowlsPerGateway: 1.5, Duration: *duration, Speed: *speed,
			BatchEvery: *batchEvery, AckTimeout: *ackTimeout, Warmup: *warmup, SampleHz: *sampleHz, Events: *events, Log: log}
		c, x, err := measure(ctx, rc)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench cost:", err)
			os.Exit(1)
		}
		rollups := "every call"
		if *rollupEvery > 0 {
			rollups = "per " + rollupEvery.String()
		}
		r = report{Source: "counted from a run", Counts: c, Detail: &x,
			Run: fmt.Sprintf("%d gateways, %d bowls, %v of run time counted after %v of warm-up (%v real at %gx); a batch per %v, ack_timeout %v; consumer: an ack per %v (QoS 0), rollups %s, registry cache %v",
				c.Gateways, c.Bowls, c.Duration.Round(time.Second), *warmup, duration.Round(time.Second), *speed, *batchEvery, *ackTimeout, *ackEvery, rollups, *registryTTL),
			Notes: append([]string{fmt.Sprintf("batches are edge/wire/batch payloads of every bowl's weight_g at %g Hz; the largest was %d bytes", *sampleHz, c.MaxMessageBytes)},
				runNotes(c, x)...)}
	}
	r.Extra = map[string]string{"peak": fmt.Sprint(*peak)}
	e, err := pricing.Run(r.Counts, model)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench cost:", err)
		os.Exit(2)
	}
	r.Estimate, r.Prices, r.Quotas = e, pricing.Prices, pricing.Quotas

	var text bytes.Buffer
	printReport(&text, r)
	js, _ := json.MarshalIndent(r, "", "  ")
	if *out != "" {
		if err := write(*out, text.Bytes(), js); err != nil {
			fmt.Fprintln(os.Stderr, "bench cost:", err)
			os.Exit(1)
		}
	}
	var w io.Writer = os.Stdout
	if *asJSON {
		_, _ = w.Write(append(js, '\n'))
		return
	}
	_, _ = w.Write(text.Bytes())
}

func write(dir string, text, js []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cost.txt"), text, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cost.json"), append(js, '\n'), 0o644)
}
