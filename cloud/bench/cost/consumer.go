package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/cloud/iotdata"
	"github.com/bowline-iot/bowline/internal/awscalls"
	"github.com/bowline-iot/bowline/internal/awsenv"
)

// lambdaMemoryMB is the consumer function's MemorySize in
// deploy/cloudformation/bowline.yaml (TelemetryConsumer, arm64).
const lambdaMemoryMB = 256

// ingestMemoryMB is the events consumer's MemorySize in
// deploy/cloudformation/bowline.yaml (IngestFunction, arm64).
const ingestMemoryMB = 512

// lambdaFullCPUMB is the memory at which Lambda gives a function one full
// vCPU; below it the CPU share is memory / lambdaFullCPUMB (AWS Lambda's
// memory and computing power documentation).
const lambdaFullCPUMB = 1769

// gbSeconds is what a handler that took wall time, cpu of it on a full
// core, is billed at memMB: the waiting (wall - cpu) lasts as long at any
// memory, the CPU work stretches by lambdaFullCPUMB / memMB below a full
// vCPU, so that its GB-seconds do not shrink with the memory.
func gbSeconds(wall, cpu time.Duration, memMB int) float64 {
	cpu = min(cpu, wall)
	share := min(1, float64(memMB)/lambdaFullCPUMB)
	return float64(memMB) / 1024 * ((wall - cpu).Seconds() + cpu.Seconds()/share)
}

// realConsumer is the telemetry path's consumer as `bowline dev` wires it
// (cloud/dev startTelemetryPath), on the run's stack: the event source
// stand-in reads the telemetry stream into cloud/durable, both built
// through cloud/app on Env.AWS so that their Kinesis, DynamoDB and SQS
// calls are counted; acknowledgements go through the real
// iotdata.Publisher to an iotdata.LocalEndpoint on the run's broker,
// which counts the HTTPS requests as AWS IoT would meter them.
//
// What only the stand-in does is kept out of the bill: its checkpoints
// (Lambda keeps its own position in AWS) are written through
// Env.LocalAWS and counted apart.
type realConsumer struct {
	cfg   durable.Config
	app   *app.App
	es    *eventsource.Runner
	srv   *http.Server
	local *awscalls.Usage

	invocations, records atomic.Int64
	handlerNanos         atomic.Int64
	// cpuNanos is the thread CPU time decoding the same records again
	// took, outside the handler: the CPU-bound part of its work (a lower
	// bound), not inflated by the machine's load (cpuTime).
	cpuNanos         atomic.Int64
	publishes, units atomic.Int64
	shards           sync.Map // shard id -> struct{}, the shards records came from

	cancel context.CancelFunc
	wg     sync.WaitGroup
	errMu  sync.Mutex
	err    error
}

var _ Consumer = (*realConsumer)(nil)

// newRealConsumer returns the stage for cfg's cadences (durable's
// AckEvery and RollupEvery); the dependencies are filled in by Start.
func newRealConsumer(cfg durable.Config) *realConsumer { return &realConsumer{cfg: cfg} }

// Start registers the fleet's bowls in the device registry (before the
// counted window), starts the local IoT data endpoint, the consumer and
// the event source, and returns once they run.
func (s *realConsumer) Start(ctx context.Context, env Env) error {
	if env.Broker == nil {
		return errors.New("consumer: the run has no broker to publish acknowledgements on")
	}
	a, err := app.Open(app.Config{AWS: env.AWS, Names: env.Names, Logger: env.Log, Part: app.PartConsume})
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	s.app = a
	reg, err := a.Devices()
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	for _, gw := range env.Gateways {
		for _, b := range env.Bowls[gw] {
			if _, err := reg.Register(ctx, b, env.Tenant); err != nil {
				return fmt.Errorf("consumer: register thing %q to tenant %q: %w", b, env.Tenant, err)
			}
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("consumer: iot data endpoint: %w", err)
	}
	endpoint := &iotdata.LocalEndpoint{Broker: env.Broker, Logger: env.Log}
	s.srv = &http.Server{Handler: s.metered(endpoint), ReadHeaderTimeout: 5 * time.Second}
	s.goRun(func() error {
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("iot data endpoint: %w", err)
		}
		return nil
	})
	pub, err := a.IoTPublisher("http://" + ln.Addr().String())
	if err != nil {
		return err
	}

	dc := s.cfg
	dc.Now, dc.Logger = env.Now, env.Log.With("part", "consume")
	consumer, err := a.TelemetryConsumer(dc, pub)
	if err != nil {
		return err
	}
	s.local = awscalls.NewUsage()
	checkpoints := dynamodb.NewFromConfig(s.local.Config(env.LocalAWS), awsenv.DynamoDBOptions)
	es, err := a.EventSource(ctx, s.timed(app.TelemetryHandler(consumer)), func(c *eventsource.Config) {
		c.Checkpoints, c.Logger = checkpoints, env.Log.With("part", "eventsource")
	})
	if err != nil {
		return err
	}
	s.es = es
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.goRun(func() error { return es.Run(runCtx) })
	return nil
}

// timed counts h's calls (Lambda invocations), their records and their
// wall time (the billed duration at full CPU), and takes the CPU time of
// decoding the records again (the CPU-bound part, which Lambda stretches
// below a full vCPU: gbSeconds).
func (s *realConsumer) timed(h eventsource.Handler) eventsource.Handler {
	return func(ctx context.Context, recs []eventsource.Record) (string, error) {
		start := time.Now()
		retry, err := h(ctx, recs)
		s.handlerNanos.Add(int64(time.Since(start)))
		s.cpuNanos.Add(int64(cpuTime(func() {
			for _, r := range recs {
				_, _ = durable.DecodeRecord(r.Data)
			}
		})))
		s.invocations.Add(1)
		s.records.Add(int64(len(recs)))
		for _, r := range recs {
			s.shards.Store(r.ShardID, struct{}{})
		}
		return retry, err
	}
}

// metered counts the IoT data plane Publish requests the endpoint answers
// 200, each in 5 KB units of its body, as AWS IoT meters an HTTP publish.
func (s *realConsumer) metered(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		if sw.status == http.StatusOK {
			s.publishes.Add(1)
			s.units.Add(max(1, (int64(len(body))+awscalls.IoTMeterUnit-1)/awscalls.IoTMeterUnit))
		}
	})
}

// Counts is safe to call at any time.
func (s *realConsumer) Counts() ConsumerCounts {
	c := ConsumerCounts{
		Invocations: s.invocations.Load(), Records: s.records.Load(), Handler: time.Duration(s.handlerNanos.Load()), CPU: time.Duration(s.cpuNanos.Load()),
		MemoryMB: lambdaMemoryMB, HTTPSPublishes: s.publishes.Load(), HTTPSPublishUnits: s.units.Load(),
		BatchSize: eventsource.TelemetryConsumer.BatchSize, BatchWindow: time.Duration(eventsource.TelemetryConsumer.MaximumBatchingWindowInSeconds) * time.Second,
	}
	if s.local != nil {
		u := s.local.Counts()
		for _, v := range u.WRU {
			c.CheckpointWRU += v
		}
		c.CheckpointWrites = u.Calls["DynamoDB.PutItem"] + u.Calls["DynamoDB.UpdateItem"]
	}
	s.shards.Range(func(any, any) bool { c.Shards++; return true })
	return c
}

// Close stops the event source, then the endpoint.
func (s *realConsumer) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	if s.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.srv.Shutdown(ctx)
		cancel()
	}
	s.wg.Wait()
	err := s.err
	if s.app != nil {
		err = errors.Join(err, s.app.Close())
	}
	return err
}

func (s *realConsumer) goRun(f func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := f(); err != nil && !errors.Is(err, context.Canceled) {
			s.errMu.Lock()
			s.err = errors.Join(s.err, err)
			s.errMu.Unlock()
		}
	}()
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
