// Command ingest is the ingest section of scripts/bench. It measures
// telemetry throughput from the MQTT broker to Kinesis through cloud/ingest,
// beside raw PutRecords of the same records on the same kinesis-local in the
// same run (raw, then ingest, then raw again). It starts its own local stack
// (internal/localstack).
//
//	go run ./cloud/bench/ingest [--messages 2000] [--samples 20] [--things 8] [--json]
//
// Samples/s counts a sample when Kinesis accepted its record (raw) or when
// ingest acknowledged its MQTT message, which it does only after Kinesis
// accepted the record (ingest). Each phase writes to a fresh stream:
// kinesis-local slows down as a stream fills, which would otherwise favour
// whichever phase runs first.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/telemetry"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/latency"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/resources"
)

type result struct {
	Messages          int       `json:"messages"`
	SamplesPerMessage int       `json:"samples_per_message"`
	Things            int       `json:"things"`
	RawSamplesPerSec  []float64 `json:"raw_samples_per_s"`
	IngestSamplesPerS float64   `json:"ingest_samples_per_s"`
	RatioToRaw        float64   `json:"ratio_to_raw"`
	AckLatencyP50Ms   float64   `json:"ack_latency_p50_ms"`
	AckLatencyP99Ms   float64   `json:"ack_latency_p99_ms"`
}

func main() {
	fs := flag.NewFlagSet("bench ingest", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "bench ingest: telemetry samples/s broker -> Kinesis through ingest, beside raw PutRecords\n\nUsage: go run ./cloud/bench/ingest [flags]\n\nFlags:")
		fs.PrintDefaults()
	}
	messages := fs.Int("messages", 2000, "telemetry messages to send through each path")
	samples := fs.Int("samples", 20, "samples per message")
	things := fs.Int("things", 8, "distinct things (partition keys)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	verbose := fs.Bool("v", false, "log the stack's lifecycle")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if *messages < 1 || *samples < 1 || *things < 1 {
		fmt.Fprintln(os.Stderr, "bench ingest: --messages, --samples and --things must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	res, err := run(ctx, log, *messages, *samples, *things)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench ingest:", err)
		os.Exit(1)
	}
	if *asJSON {
		_ = json.NewEncoder(os.Stdout).Encode(res)
		return
	}
	fmt.Printf("telemetry broker -> Kinesis: %d messages x %d samples, %d things\n", res.Messages, res.SamplesPerMessage, res.Things)
	fmt.Printf("  raw PutRecords:  %v samples/s\n", res.RawSamplesPerSec)
	fmt.Printf("  through ingest:  %.0f samples/s (%.0f%% of the mean raw rate)\n", res.IngestSamplesPerS, 100*res.RatioToRaw)
	fmt.Printf("  ack latency:     p50 %.1f ms, p99 %.1f ms\n", res.AckLatencyP50Ms, res.AckLatencyP99Ms)
}

func run(ctx context.Context, log *slog.Logger, messages, perMsg, nThings int) (result, error) {
	stack, err := localstack.StartScratch(ctx, localstack.Config{Services: []localstack.Service{localstack.DynamoDB, localstack.Kinesis, localstack.MQTT}, Logger: log}, "bench")
	if err != nil {
		return result{}, err
	}
	defer stack.Close()
	names, cfg := stack.Names, stack.AWS
	kin := kinesis.NewFromConfig(cfg)
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	reg, err := devices.New(ddb, names.AppTable(), nil)
	if err != nil {
		return result{}, err
	}
	tenant := "bench"
	things := make([]string, nThings)
	for i := range things {
		things[i] = fmt.Sprintf("bench-bowl-%d", i)
		if _, err := reg.Register(ctx, things[i], tenant); err != nil {
			return result{}, err
		}
	}
	res := result{Messages: messages, SamplesPerMessage: perMsg, Things: nThings}
	// Each raw phase writes to a fresh stream, as ingest does, because
	// kinesis-local slows down as a stream fills.
	raw := func() error {
		stream := fmt.Sprintf("%s-bench-raw-%d", names.Stack, len(res.RawSamplesPerSec))
		if _, err := kin.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(1)}); err != nil {
			return fmt.Errorf("create stream %s: %w", stream, err)
		}
		if err := kinesis.NewStreamExistsWaiter(kin).Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(stream)}, time.Minute); err != nil {
			return fmt.Errorf("wait for stream %s: %w", stream, err)
		}
		r, err := rawPut(ctx, kin, stream, tenant, things, messages, perMsg)
		if err != nil {
			return err
		}
		res.RawSamplesPerSec = append(res.RawSamplesPerSec, float64(int(r)))
		return nil
	}
	if err := raw(); err != nil {
		return res, err
	}
	rate, lat, err := throughIngest(ctx, log, stack.MQTTAddr, names, cfg, tenant, things, messages, perMsg)
	if err != nil {
		return res, err
	}
	res.IngestSamplesPerS = float64(int(rate))
	if err := raw(); err != nil {
		return res, err
	}
	var mean float64
	for _, r := range res.RawSamplesPerSec {
		mean += r
	}
	mean /= float64(len(res.RawSamplesPerSec))
	res.RatioToRaw = float64(int(1000*rate/mean)) / 1000
	ack := latency.Summarize(lat)
	res.AckLatencyP50Ms, res.AckLatencyP99Ms = ack.P50, ack.P99
	return res, nil
}

func samplesOf(perMsg int, at time.Time) []wire.Sample {
	s := make([]wire.Sample, perMsg)
	for i := range s {
		s[i] = wire.Sample{T: at.Add(time.Duration(i) * time.Second), Kind: "weight_g", Value: 400 + float64(i)/10}
	}
	return s
}

// rawPut writes records shaped like ingest's with PutRecords batches of 500,
// four calls in flight (ingest's defaults), retrying failed records.
func rawPut(ctx context.Context, kin *kinesis.Client, stream, tenant string, things []string, messages, perMsg int) (float64, error) {
	type rec struct {
		V          int           `json:"v"`
		Tenant     string        `json:"tenant"`
		Thing      string        `json:"thing"`
		Seq        uint64        `json:"seq"`
		LastSeq    uint64        `json:"last_seq"`
		ReceivedAt time.Time     `json:"received_at"`
		Samples    []wire.Sample `json:"samples"`
	}
	at := time.Now().Add(-time.Hour).UTC()
	entries := make([]ktypes.PutRecordsRequestEntry, messages)
	for i := range entries {
		th := things[i%len(things)]
		seq := uint64(1_000_000 + (i/len(things))*perMsg)
		data, _ := json.Marshal(rec{1, tenant, th, seq, seq + uint64(perMsg) - 1, time.Now().UTC(), samplesOf(perMsg, at)})
		entries[i] = ktypes.PutRecordsRequestEntry{Data: data, PartitionKey: aws.String(th)}
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	sem := make(chan struct{}, 4)
	for i := 0; i < len(entries); i += telemetry.MaxPutRecords {
		batch := entries[i:min(i+telemetry.MaxPutRecords, len(entries))]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			for len(batch) > 0 {
				out, err := kin.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: batch})
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
				var failed []ktypes.PutRecordsRequestEntry
				for j, r := range out.Records {
					if r.ErrorCode != nil {
						failed = append(failed, batch[j])
					}
				}
				batch = failed
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, fmt.Errorf("raw put records: %w", err)
	default:
	}
	return float64(messages*perMsg) / time.Since(start).Seconds(), nil
}

// ackCounter observes ingest's acks.
type ackCounter struct {
	ingest.NopObserver
	acked                  atomic.Int64
	calls, records, failed atomic.Int64
	received, lastReceived atomic.Int64
	mu                     sync.Mutex
	lat                    []time.Duration
	done                   chan struct{}
	want                   int64
}

func (a *ackCounter) PutRecords(records, _, failed int, err error, _ time.Duration) {
	a.calls.Add(1)
	a.records.Add(int64(records))
	a.failed.Add(int64(failed))
}
func (a *ackCounter) RecordRetried(string) {}

func (a *ackCounter) Received(string) {
	if a.received.Add(1) == a.want {
		a.lastReceived.Store(time.Now().UnixNano())
	}
}
func (a *ackCounter) Rejected(k string, r ingest.Reason) { fmt.Fprintln(os.Stderr, "rejected:", k, r) }
func (a *ackCounter) Acked(x ingest.Ack) {
	a.mu.Lock()
	a.lat = append(a.lat, x.SinceReceipt)
	a.mu.Unlock()
	if a.acked.Add(1) == a.want {
		close(a.done)
	}
}

func throughIngest(ctx context.Context, log *slog.Logger, broker string, names resources.Names, cfg aws.Config, tenant string, things []string, messages, perMsg int) (float64, []time.Duration, error) {
	obs := &ackCounter{done: make(chan struct{}), want: int64(messages)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.Open(app.Config{AWS: cfg, Names: names, Logger: quiet})
	if err != nil {
		return 0, nil, err
	}
	defer a.Close()
	in, err := a.Ingest(ingest.Config{Broker: broker, ClientID: "bench-ingest", Group: "bench", Logger: quiet, Observer: obs})
	if err != nil {
		return 0, nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- in.Run(rctx) }()
	defer func() { cancel(); <-runDone }()
	select {
	case <-in.Ready():
	case err := <-runDone:
		return 0, nil, fmt.Errorf("ingest: %w", err)
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
	// Pre-encode every payload so the publisher is not what is measured.
	at := time.Now().Add(-time.Hour).UTC()
	payloads := make([][]byte, messages)
	topics := make([]string, messages)
	for i := range payloads {
		th := things[i%len(things)]
		seq := uint64(1 + (i/len(things))*perMsg)
		payloads[i], _ = json.Marshal(wire.TelemetryMessage{V: wire.Version, Thing: th, Seq: seq, Samples: samplesOf(perMsg, at)})
		topics[i] = wire.Topic{Tenant: tenant, Thing: th, Kind: wire.KindTelemetry}.String()
	}
	const publishers = 4
	// Keep the messages the broker holds for ingest well under mochi's
	// per-client in-flight store (8192), which drops beyond it.
	const window = 3000
	var sent atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(broker).SetClientID(fmt.Sprintf("bench-ingest-pub-%d", p)).SetCleanSession(true).SetMaxResumePubInFlight(100))
			if tok := c.Connect(); tok.Wait() && tok.Error() != nil {
				errs <- tok.Error()
				return
			}
			defer c.Disconnect(100)
			var toks []mqtt.Token
			for i := p; i < messages; i += publishers {
				for sent.Load()-obs.acked.Load() > window {
					time.Sleep(time.Millisecond)
				}
				toks = append(toks, c.Publish(topics[i], 1, false, payloads[i]))
				sent.Add(1)
				if len(toks) >= 100 {
					for _, t := range toks {
						if t.Wait(); t.Error() != nil {
							errs <- t.Error()
							return
						}
					}
					toks = toks[:0]
				}
			}
			for _, t := range toks {
				if t.Wait(); t.Error() != nil {
					errs <- t.Error()
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, nil, fmt.Errorf("publish: %w", err)
	default:
	}
	select {
	case <-obs.done:
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	case <-time.After(10 * time.Minute):
		return 0, nil, fmt.Errorf("ingest acknowledged %d of %d messages in 10 minutes", obs.acked.Load(), messages)
	}
	rate := float64(messages*perMsg) / time.Since(start).Seconds()
	log.Info("ingest phase", "calls", obs.calls.Load(), "records", obs.records.Load(), "failed", obs.failed.Load(),
		"all_received_after", time.Duration(obs.lastReceived.Load()-start.UnixNano()), "all_acked_after", time.Since(start))
	obs.mu.Lock()
	defer obs.mu.Unlock()
	return rate, append([]time.Duration(nil), obs.lat...), nil
}
