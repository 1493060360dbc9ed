package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/cloud/iotdata"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/mosquitto"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
)

// tenant is the one tenant of the simulated fleet.
const tenant = "fleet"

// cloud is the cloud side of a run, in this process but for the
// emulators and the broker: the rules stand-in, the event source with the
// consumer, and the local IoT data endpoint that publishes the
// consumer's acks on the broker.
type cloud struct {
	stack  *localstack.Stack
	broker *mosquitto.Broker
	names  resources.Names
	aws    aws.Config
	app    *app.App
	rules  *rules.Runner
	kin    *ageKinesis
	lag    *lagRecorder
	obs    *consumerCounts
	flight *inFlightPeak

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	errs    []error
	closers []func()
}

// startCloud starts everything but the gateways and registers their
// things.
func startCloud(ctx context.Context, cfg config, log *slog.Logger) (*cloud, error) {
	c := &cloud{lag: &lagRecorder{}, obs: &consumerCounts{}, flight: &inFlightPeak{}}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	ok := false
	defer func() {
		if !ok {
			c.close()
		}
	}()

	st, err := localstack.Start(ctx, localstack.Config{Services: []localstack.Service{localstack.DynamoDB, localstack.SQS, localstack.Kinesis}, Logger: log})
	if err != nil {
		return nil, err
	}
	c.stack = st
	c.closers = append(c.closers, func() { _ = st.Close() })
	if err := st.Setenv(); err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	if c.names, err = resources.New("fleet" + hex.EncodeToString(b[:])); err != nil {
		return nil, err
	}
	if err := os.Setenv(resources.StackEnv, c.names.Stack); err != nil {
		return nil, err
	}
	if c.aws, err = awsenv.Load(ctx); err != nil {
		return nil, err
	}
	if _, err := provision.Provision(ctx, c.aws, c.names, provision.Options{TelemetryShards: int32(cfg.Shards)}); err != nil {
		return nil, fmt.Errorf("provision %s: %w", c.names.Stack, err)
	}

	dir, err := os.MkdirTemp("", "bowline-fleet-mosquitto-")
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, func() { _ = os.RemoveAll(dir) })
	c.broker, err = mosquitto.Start(ctx, mosquitto.Config{Dir: dir, Logger: log,
		// Saving 10k sessions every second would be most of the broker's
		// work; a crash is not what this bench measures.
		AutosaveInterval: 30 * time.Second,
		Extra: []string{"max_connections -1", "max_keepalive 65535", "set_tcp_nodelay true",
			// The stand-in's window: past it Mosquitto queues the rule's
			// messages in the session (max_queued_messages 0: unbounded)
			// instead of pushing them into the stand-in's socket.
			"max_inflight_messages " + strconv.Itoa(cfg.RulesInFlight)}})
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, c.broker.Stop)

	c.app, err = app.Open(app.Config{AWS: c.aws, Names: c.names, Logger: log})
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, func() { _ = c.app.Close() })

	// The IoT data plane endpoint, publishing acks on Mosquitto.
	ab, err := dialAckBroker(c.broker.URL(), "bowline-fleet-iot-data")
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, ab.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("iot data endpoint: %w", err)
	}
	srv := &http.Server{Handler: &iotdata.LocalEndpoint{Broker: ab, Logger: log.With("part", "iot-data")}, ReadHeaderTimeout: 5 * time.Second}
	c.run("iot data endpoint", func() error {
		context.AfterFunc(runCtx, func() { _ = srv.Close() })
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})

	// The rules stand-in: Basic Ingest publishes -> Kinesis.
	c.rules, err = c.app.Rules(ctx, rules.Config{Broker: c.broker.URL(), ClientID: "bowline-fleet-rules", MaxInFlight: cfg.RulesInFlight,
		Observer: c.flight, Logger: log.With("part", "rules")})
	if err != nil {
		return nil, err
	}
	rulesDone := c.run("rules", func() error { return c.rules.Run(runCtx) })
	select {
	case <-c.rules.Ready():
	case <-rulesDone:
		return nil, fmt.Errorf("rule stand-in stopped before it subscribed: %w", c.firstErr())
	case <-ctx.Done():
		return nil, ctx.Err()
	}

	// The consumer behind the event source, as bowline consume runs it.
	pub, err := c.app.IoTPublisher("http://" + ln.Addr().String())
	if err != nil {
		return nil, err
	}
	// Enough idle connections for the acks of a whole fleet falling due
	// together.
	pub.HTTPClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	dc := durable.DefaultConfig()
	dc.AckEvery = cfg.AckEvery
	dc.MaxGateways, dc.MaxBowls = max(10000, cfg.Gateways+cfg.Gateways/10), max(10000, 2*cfg.Gateways+1000)
	dc.Observer, dc.Logger = c.obs, log.With("part", "consume")
	consumer, err := c.app.TelemetryConsumer(dc, pub)
	if err != nil {
		return nil, err
	}
	handler := app.TelemetryHandler(consumer)
	es, err := c.app.EventSource(ctx, func(ctx context.Context, recs []eventsource.Record) (string, error) {
		failed, err := handler(ctx, recs)
		if err == nil {
			c.lag.observe(recs, failed, time.Now())
		}
		return failed, err
	}, func(ec *eventsource.Config) {
		c.kin = &ageKinesis{KinesisAPI: ec.Kinesis}
		ec.Kinesis, ec.Logger = c.kin, log.With("part", "eventsource")
	})
	if err != nil {
		return nil, err
	}
	c.run("consume", func() error { return es.Run(runCtx) })
	c.run("consume flush", func() error {
		// A gateway whose ack falls due hears it within a quarter of
		// AckEvery even with no new record of it.
		t := time.NewTicker(max(time.Second, cfg.AckEvery/4))
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return nil
			case <-t.C:
				consumer.FlushDue(runCtx)
			}
		}
	})

	if err := c.register(ctx, cfg); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// register puts every bowl in the device registry under the fleet's
// tenant, concurrently.
func (c *cloud) register(ctx context.Context, cfg config) error {
	reg, err := c.app.Devices()
	if err != nil {
		return err
	}
	things := make(chan string)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range things {
				if _, err := reg.Register(ctx, t, tenant); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	for i := range cfg.Gateways {
		for _, t := range bowlsOf(gatewayName(i), i, cfg.BowlsPerGateway) {
			things <- t
		}
	}
	close(things)
	wg.Wait()
	if p := failed.Load(); p != nil {
		return fmt.Errorf("register things: %w", *p)
	}
	return nil
}

func (c *cloud) run(name string, f func() error) <-chan struct{} {
	done := make(chan struct{})
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(done)
		if err := f(); err != nil {
			c.mu.Lock()
			c.errs = append(c.errs, fmt.Errorf("%s: %w", name, err))
			c.mu.Unlock()
		}
	}()
	return done
}

func (c *cloud) firstErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}

// close stops the parts in reverse order of start.
func (c *cloud) close() {
	c.cancel()
	c.wg.Wait()
	for _, f := range slices.Backward(c.closers) {
		f()
	}
}

// queueDepth is a queue's approximate number of messages, visible and in
// flight.
func (c *cloud) queueDepth(ctx context.Context, name string) (int, error) {
	url, err := c.app.QueueURL(ctx, name)
	if err != nil {
		return 0, err
	}
	out, err := sqs.NewFromConfig(c.aws).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return 0, fmt.Errorf("queue %s: %w", name, err)
	}
	n := 0
	for _, v := range out.Attributes {
		x, _ := strconv.Atoi(v)
		n += x
	}
	return n, nil
}

// emulatorPids names the emulator children by what they run.
func (c *cloud) emulatorPids() map[string]int {
	out := map[string]int{}
	for _, pid := range c.stack.Pids() {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		cmd := string(b)
		switch {
		case containsAny(cmd, "DynamoDBLocal", "java"):
			out["dynamodb-local"] = pid
		case containsAny(cmd, "main.js"):
			out["kinesis-local"] = pid
		default:
			out["sqs (fauxqs)"] = pid
		}
	}
	return out
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// ageKinesis passes the event source's reads through and keeps the
// MillisBehindLatest each read returned, with its time.
type ageKinesis struct {
	eventsource.KinesisAPI
	mu    sync.Mutex
	reads []ageRead
}

type ageRead struct {
	at     time.Time
	behind time.Duration
}

func (k *ageKinesis) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	out, err := k.KinesisAPI.GetRecords(ctx, in, opts...)
	if err == nil && out.MillisBehindLatest != nil {
		k.mu.Lock()
		k.reads = append(k.reads, ageRead{at: time.Now(), behind: time.Duration(*out.MillisBehindLatest) * time.Millisecond})
		k.mu.Unlock()
	}
	return out, err
}

// behind is the largest MillisBehindLatest of the reads since since, and
// the largest of all.
func (k *ageKinesis) behind(since time.Time) (recent, worst time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range k.reads {
		worst = max(worst, r.behind)
		if !r.at.Before(since) {
			recent = max(recent, r.behind)
		}
	}
	return recent, worst
}

// inFlightPeak keeps the rules stand-in's highest number of messages in
// flight (rules.Observer.InFlight).
type inFlightPeak struct {
	rules.NopObserver
	mu        sync.Mutex
	cur, peak int
}

var _ rules.Observer = (*inFlightPeak)(nil)

func (p *inFlightPeak) InFlight(delta int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur += delta
	p.peak = max(p.peak, p.cur)
}

func (p *inFlightPeak) get() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}
