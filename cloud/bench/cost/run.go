package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/awscalls"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/pricing"
)

// runConfig is one run's shape.
type runConfig struct {
	Gateways int
	// BowlsPerGateway is 1.5: every other gateway has two bowls.
	BowlsPerGateway float64
	// Duration is real time; the run's clock goes Speed times faster.
	Duration time.Duration
	Speed    float64
	// BatchEvery and AckTimeout are the gateways' (edge/forward's
	// BatchInterval and AckTimeout), in run time: one batch per gateway
	// per BatchEvery, and what stays unacknowledged AckTimeout after it
	// was sent goes again in the next batch. The consumer's cadences are
	// consumerStage's (durable.Config AckEvery, RollupEvery).
	BatchEvery, AckTimeout time.Duration
	// Warmup is the run time between the gateways' first batches and the
	// start of the counting.
	Warmup time.Duration
	// SampleHz is each bowl's sample rate.
	SampleHz float64
	// Events is how many bowl events the events pass drives through the
	// events path after the telemetry run (0: none, the events path not
	// measured).
	Events int
	Log    *slog.Logger
}

const tenant = "bench"

// bowlsOf gives gateway i one bowl, or two for every other gateway, so
// that the fleet has BowlsPerGateway bowls per gateway on average.
func bowlsOf(gw string, i int, perGateway float64) []string {
	n := int(math.Floor(float64(i+1)*perGateway) - math.Floor(float64(i)*perGateway))
	bowls := make([]string, max(1, n))
	for j := range bowls {
		bowls[j] = fmt.Sprintf("%s:%d", gw, j)
	}
	return bowls
}

// measure runs the simulated fleet on the local stack and returns what it
// counted.
func measure(ctx context.Context, rc runConfig) (pricing.Counts, runExtra, error) {
	// Only what the wired stages use: DynamoDB Local is a JVM.
	services := []localstack.Service{localstack.MQTT}
	if rulesStage != nil {
		services = append(services, localstack.Kinesis, localstack.SQS)
	}
	if consumerStage != nil {
		services = localstack.AllServices
	}
	stack, err := localstack.StartScratch(ctx, localstack.Config{Services: services, Logger: rc.Log}, "cost")
	if err != nil {
		return pricing.Counts{}, runExtra{}, err
	}
	defer stack.Close()

	meter := &mqttbroker.Meter{Class: ackClass, Skip: IsStandIn, HTTPS: IsHTTPSStandIn}
	if err := stack.Broker().AddHook(meter, nil); err != nil {
		return pricing.Counts{}, runExtra{}, fmt.Errorf("add meter: %w", err)
	}
	usage := awscalls.NewUsage()
	env := Env{BrokerURL: stack.MQTTAddr, Broker: stack.MQTTBroker(), AWS: usage.Config(stack.AWS), LocalAWS: stack.AWS,
		Names: stack.Names, Tenant: tenant, Bowls: map[string][]string{}, Speed: rc.Speed, Now: runClock(time.Now(), rc.Speed), Log: rc.Log}
	bowls := 0
	for i := range rc.Gateways {
		gw := fmt.Sprintf("gw-%04d", i)
		env.Gateways = append(env.Gateways, gw)
		env.Bowls[gw] = bowlsOf(gw, i, rc.BowlsPerGateway)
		bowls += len(env.Bowls[gw])
	}

	notMeasured := map[pricing.Stage]string{}
	for stage, why := range notWired {
		notMeasured[stage] = why
	}
	if rulesStage != nil {
		if err := rulesStage.Start(ctx, env); err != nil {
			return pricing.Counts{}, runExtra{}, fmt.Errorf("start rules: %w", err)
		}
		defer rulesStage.Close()
		delete(notMeasured, pricing.StageRules)
		delete(notMeasured, pricing.StageQueues)
	}
	if consumerStage != nil {
		if err := consumerStage.Start(ctx, env); err != nil {
			return pricing.Counts{}, runExtra{}, fmt.Errorf("start consumer: %w", err)
		}
		defer consumerStage.Close()
		delete(notMeasured, pricing.StageConsumer)
	}
	rc.Log.Info("cost run", "gateways", rc.Gateways, "bowls", bowls, "consumer", consumerStage != nil)

	// The gateways connect and subscribe first; counting starts once all
	// have, so that start-up (every CONNECT and SUBSCRIBE at once) is not
	// scaled up as if it were the steady state.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg, ready sync.WaitGroup
	begin := make(chan struct{})
	errs := make(chan error, rc.Gateways+1)
	gws := make([]*gateway, len(env.Gateways))
	for i, gw := range env.Gateways {
		wg.Add(1)
		ready.Add(1)
		gws[i] = newGateway(rc, env, gw)
		go func() {
			defer wg.Done()
			if err := gws[i].run(runCtx, ready.Done, begin); err != nil {
				errs <- fmt.Errorf("gateway %s: %w", gw, err)
				cancel()
			}
		}()
	}
	ready.Wait()
	close(begin)
	// The consumer's start-up is not its steady state either: its first
	// ack of each gateway is due at once, and it reads every state row
	// and registry entry once. Counting starts Warmup of run time later.
	select {
	case <-runCtx.Done():
	case <-time.After(time.Duration(float64(rc.Warmup) / rc.Speed)):
	}
	m0, u0, g0 := meter.Counts(), usage.Counts(), sumGateways(gws)
	var r0 RuleCounts
	var k0 ConsumerCounts
	if rulesStage != nil {
		r0 = rulesStage.Counts()
	}
	if consumerStage != nil {
		k0 = consumerStage.Counts()
	}
	start := time.Now()
	stopAt := time.AfterFunc(rc.Duration, cancel)
	defer stopAt.Stop()
	<-runCtx.Done()
	elapsed := time.Since(start)
	m1, u1, g1 := meter.Counts(), usage.Counts(), sumGateways(gws)
	var k1 ConsumerCounts
	if consumerStage != nil {
		k1 = consumerStage.Counts()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		return pricing.Counts{}, runExtra{}, err
	}
	if ctx.Err() != nil {
		return pricing.Counts{}, runExtra{}, ctx.Err()
	}
	c := countsOf(m1.Since(m0), u1.Since(u0), rc.Speed, elapsed)
	c.Gateways, c.Bowls, c.NotMeasured = rc.Gateways, bowls, notMeasured
	x := runExtra{Gateways: g1.since(g0), Usage: u1.Since(u0), AckTraffic: m1.Since(m0).Classes[classAck]}
	if consumerStage != nil {
		k := k1
		c.LambdaInvocations = k.Invocations - k0.Invocations
		// Handler time is real time: the run's clock does not speed up the
		// work a record takes.
		c.LambdaGBSeconds = gbSeconds(k.Handler-k0.Handler, k.CPU-k0.CPU, k.MemoryMB)
		c.LambdaBatchSize, c.LambdaBatchWindow = k.BatchSize, k.BatchWindow
		c.RunShards = max(1, k.Shards)
		// The acks' HTTPS publishes, counted at the IoT data endpoint; the
		// broker counted their deliveries (inline publishes are not seen
		// as inbound).
		https, units := k.HTTPSPublishes-k0.HTTPSPublishes, k.HTTPSPublishUnits-k0.HTTPSPublishUnits
		c.Acks += https
		c.HTTPPublishes += https
		c.AckMessaging = c.AckMessaging.Add(pricing.MessageCount{Messages: https, Units: units})
		x.Consumer = ConsumerCounts{
			Invocations: c.LambdaInvocations, Records: k.Records - k0.Records, Handler: k.Handler - k0.Handler, CPU: k.CPU - k0.CPU,
			MemoryMB: k.MemoryMB, BatchSize: k.BatchSize, BatchWindow: k.BatchWindow, Shards: k.Shards,
			HTTPSPublishes: https, HTTPSPublishUnits: units,
			CheckpointWrites: k.CheckpointWrites - k0.CheckpointWrites, CheckpointWRU: k.CheckpointWRU - k0.CheckpointWRU,
		}
	}
	if rulesStage != nil {
		r := rulesStage.Counts()
		c.RuleEvaluations, c.RuleUnits = r.Evaluations-r0.Evaluations, r.EvaluationUnits-r0.EvaluationUnits
		c.RuleActions, c.RuleActionUnits = r.Actions-r0.Actions, r.ActionUnits-r0.ActionUnits
	}
	if rc.Events > 0 && consumerStage != nil {
		// After the telemetry run, so that neither slows the other's
		// handler; counted apart and added in proportion (addEvents).
		e, err := measureEvents(ctx, env, rc.Events)
		if err != nil {
			return pricing.Counts{}, runExtra{}, fmt.Errorf("events pass: %w", err)
		}
		addEvents(&c, e, ingestMemoryMB)
		x.Events = &e
	} else {
		c.NotMeasured[pricing.StageEvents] = "the events pass did not run (--events 0)"
	}
	return c, x, nil
}

// runExtra is what a run counted beside the model's counts: the
// gateways' side of the acks, every AWS call by operation and table, and
// the consumer's own counts.
type runExtra struct {
	Gateways gatewayCounts        `json:"gateways"`
	Usage    awscalls.UsageCounts `json:"aws_usage"`
	Consumer ConsumerCounts       `json:"consumer"`
	// AckTraffic is the acks at the broker: deliveries, PUBACKs.
	AckTraffic mqttbroker.Traffic `json:"ack_traffic"`
	// Events is the events pass's own counts, before addEvents scaled
	// them into the run's; nil when it did not run.
	Events *eventCounts `json:"events,omitempty"`
}

// runClock is a clock that starts at start and runs speed times faster
// than real time.
func runClock(start time.Time, speed float64) func() time.Time {
	return func() time.Time {
		return start.Add(time.Duration(float64(time.Since(start)) * speed)).UTC()
	}
}

// countsOf turns the meter's and the recorder's counts into the model's.
// Run time is real time x speed: the simulated fleet did speed times as
// much per real second, so its connected time is counted in run time too.
func countsOf(m mqttbroker.Metered, u awscalls.UsageCounts, speed float64, elapsed time.Duration) pricing.Counts {
	tel, ack := m.Classes[""], m.Classes[classAck]
	c := pricing.Counts{
		Duration:             time.Duration(float64(elapsed) * speed),
		ConnectionSeconds:    m.ConnectionSeconds * speed,
		Reconnects:           m.Reconnects,
		MaxConnections:       m.MaxConnections,
		Messaging:            pricing.MessageCount{Messages: tel.Messages, Units: tel.Units},
		BasicIngest:          pricing.MessageCount{Messages: m.BasicIngest.PublishesIn, Units: m.BasicIngest.Units},
		PublishesIn:          tel.PublishesIn + ack.PublishesIn - m.HTTPSPublishes,
		PublishesOut:         tel.PublishesOut + ack.PublishesOut,
		MaxConnPublishes:     m.MaxClientPublishes,
		MaxConnBytes:         m.MaxClientBytes,
		MaxConnSubscriptions: m.MaxClientSubscriptions,
		MaxMessageBytes:      m.MaxPublishBytes,
		Acks:                 ack.PublishesIn + u.IoTPublishes,
		HTTPPublishes:        m.HTTPSPublishes + u.IoTPublishes,
		AckMessaging:         pricing.MessageCount{Messages: ack.Messages + u.IoTPublishes, Units: ack.Units + u.IoTPublishUnits},
		KinesisRecords:       u.KinesisRecords,
		KinesisBytes:         u.KinesisBytes,
		KinesisBilledBytes:   u.KinesisBilledBytes,
		KinesisPutUnits:      u.KinesisPutUnits,
		KinesisGetRecords:    u.KinesisGetRecords,
		KinesisBytesRead:     u.KinesisBytesRead,
		WRU:                  u.WRU,
		RRU:                  u.RRU,
		MaxKeyWRU:            u.MaxKeyWRU,
		MaxKeyRRU:            u.MaxKeyRRU,
		StreamsGetRecords:    u.StreamsGetRecords,
		SQSRequests:          u.SQSRequests,
		SQSFIFORequests:      u.SQSFIFORequests,
	}
	return c
}

// classAck is the meter class of acknowledgements.
const classAck = "ack"

func ackClass(topic string) string {
	if _, _, err := wire.ParseAckTopic(topic); err == nil {
		return classAck
	}
	return ""
}

func randUint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}
