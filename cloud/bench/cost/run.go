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

	paho "github.com/eclipse/paho.mqtt.golang"

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
	// BatchEvery and AckEvery are in run time: one batch per gateway per
	// BatchEvery, one acknowledgement per gateway per AckEvery.
	BatchEvery, AckEvery time.Duration
	// SampleHz is each bowl's sample rate; AckQoS the QoS acks are
	// published and subscribed at.
	SampleHz float64
	AckQoS   byte
	Log      *slog.Logger
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
func measure(ctx context.Context, rc runConfig) (pricing.Counts, error) {
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
		return pricing.Counts{}, err
	}
	defer stack.Close()

	meter := &mqttbroker.Meter{Class: ackClass, Skip: IsStandIn, HTTPS: IsHTTPSStandIn}
	if err := stack.Broker().AddHook(meter, nil); err != nil {
		return pricing.Counts{}, fmt.Errorf("add meter: %w", err)
	}
	usage := awscalls.NewUsage()
	env := Env{BrokerURL: stack.MQTTAddr, AWS: usage.Config(stack.AWS), Names: stack.Names, Tenant: tenant,
		Bowls: map[string][]string{}, Speed: rc.Speed, Log: rc.Log}
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
			return pricing.Counts{}, fmt.Errorf("start rules: %w", err)
		}
		defer rulesStage.Close()
		delete(notMeasured, pricing.StageRules)
		delete(notMeasured, pricing.StageQueues)
	}
	ackedBy := "the bench's placeholder acker (TODO(integrator): the consumer publishes acks once it lands)"
	if consumerStage != nil {
		if err := consumerStage.Start(ctx, env); err != nil {
			return pricing.Counts{}, fmt.Errorf("start consumer: %w", err)
		}
		defer consumerStage.Close()
		delete(notMeasured, pricing.StageConsumer)
		ackedBy = "the consumer"
	}
	rc.Log.Info("cost run", "gateways", rc.Gateways, "bowls", bowls, "acks by", ackedBy)

	// The gateways connect and subscribe first; counting starts once all
	// have, so that start-up (every CONNECT and SUBSCRIBE at once) is not
	// scaled up as if it were the steady state.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg, ready sync.WaitGroup
	begin := make(chan struct{})
	errs := make(chan error, rc.Gateways+1)
	for _, gw := range env.Gateways {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			if err := gateway(runCtx, rc, env, gw, ready.Done, begin); err != nil {
				errs <- fmt.Errorf("gateway %s: %w", gw, err)
				cancel()
			}
		}()
	}
	ready.Wait()
	m0, u0 := meter.Counts(), usage.Counts()
	var r0 RuleCounts
	var k0 ConsumerCounts
	if rulesStage != nil {
		r0 = rulesStage.Counts()
	}
	if consumerStage != nil {
		k0 = consumerStage.Counts()
	}
	start := time.Now()
	close(begin)
	stopAt := time.AfterFunc(rc.Duration, cancel)
	defer stopAt.Stop()
	if consumerStage == nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := placeholderAcker(runCtx, rc, env); err != nil {
				errs <- fmt.Errorf("acker: %w", err)
			}
		}()
	}
	<-runCtx.Done()
	elapsed := time.Since(start)
	m1, u1 := meter.Counts(), usage.Counts()
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		return pricing.Counts{}, err
	}
	if ctx.Err() != nil {
		return pricing.Counts{}, ctx.Err()
	}
	c := countsOf(m1.Since(m0), u1.Since(u0), rc.Speed, elapsed)
	c.Gateways, c.Bowls, c.NotMeasured = rc.Gateways, bowls, notMeasured
	if rulesStage != nil {
		r := rulesStage.Counts()
		c.RuleEvaluations, c.RuleUnits = r.Evaluations-r0.Evaluations, r.EvaluationUnits-r0.EvaluationUnits
		c.RuleActions, c.RuleActionUnits = r.Actions-r0.Actions, r.ActionUnits-r0.ActionUnits
	}
	if consumerStage != nil {
		k := consumerStage.Counts()
		c.LambdaInvocations = k.Invocations - k0.Invocations
		// Handler time is real time: the run's clock does not speed up the
		// work a record takes.
		c.LambdaGBSeconds = (k.Handler - k0.Handler).Seconds() * float64(k.MemoryMB) / 1024
		c.RunShards = k.Shards
	}
	return c, nil
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

// gateway is one light simulated gateway: it connects, subscribes to its
// ack topic and publishes one batch per BatchEvery on its Basic Ingest
// topic at QoS 1, starting at a random offset so the fleet is not in step.
// It calls ready once subscribed (or failed) and publishes nothing before
// begin is closed.
func gateway(ctx context.Context, rc runConfig, env Env, gw string, ready func(), begin <-chan struct{}) error {
	once := sync.OnceFunc(ready)
	defer once()
	c := paho.NewClient(paho.NewClientOptions().AddBroker(env.BrokerURL).SetClientID(gw).
		SetCleanSession(true).SetAutoReconnect(true).SetKeepAlive(5 * time.Minute))
	if tok := c.Connect(); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
		return fmt.Errorf("connect: %v", tok.Error())
	}
	defer c.Disconnect(250)
	if tok := c.Subscribe(wire.AckTopic(env.Tenant, gw), rc.AckQoS, func(paho.Client, paho.Message) {}); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
		return fmt.Errorf("subscribe: %v", tok.Error())
	}
	once()
	select {
	case <-ctx.Done():
		return nil
	case <-begin:
	}
	topic := wire.BasicIngestTopic(wire.RuleName(env.Names.Stack, wire.TelemetryRule), wire.Topic{Tenant: env.Tenant, Thing: gw, Kind: wire.KindBatch})
	every := time.Duration(float64(rc.BatchEvery) / rc.Speed)
	offset := time.Duration(randUint64() % uint64(every))
	src := newSource(gw, env.Bowls[gw], rc.SampleHz, randUint64(), time.Now().UTC())
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(offset):
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		payload, _, err := src.next(rc.BatchEvery)
		if err != nil {
			return fmt.Errorf("encode batch: %w", err)
		}
		tok := c.Publish(topic, 1, false, payload)
		if !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
			return fmt.Errorf("publish batch: %v", tok.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
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

// placeholderAcker publishes one acknowledgement per gateway per AckEvery
// as the consumer will, from an HTTPS stand-in client, so that the ack
// path's messages are counted at the broker before the consumer lands.
// TODO(integrator): drop it once consumerStage is wired.
func placeholderAcker(ctx context.Context, rc runConfig, env Env) error {
	c := paho.NewClient(paho.NewClientOptions().AddBroker(env.BrokerURL).SetClientID(httpsPrefix + "acker").SetAutoReconnect(true))
	if tok := c.Connect(); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
		return fmt.Errorf("connect: %v", tok.Error())
	}
	defer c.Disconnect(250)
	every := time.Duration(float64(rc.AckEvery) / rc.Speed)
	step := every / time.Duration(len(env.Gateways))
	seq := map[string]uint64{}
	tick := time.NewTicker(max(step, time.Millisecond))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		gw := env.Gateways[i%len(env.Gateways)]
		things := map[string][]wire.Range{}
		for _, b := range env.Bowls[gw] {
			// Ten minutes of samples at one per ten seconds per bowl.
			things[b] = []wire.Range{{First: seq[b] + 1, Last: seq[b] + 60}}
			seq[b] += 60
		}
		body, err := wire.EncodeAck(wire.AckMessage{Outbox: "ob-" + gw, Things: things, At: time.Now().UTC()})
		if err != nil {
			return err
		}
		tok := c.Publish(wire.AckTopic(env.Tenant, gw), rc.AckQoS, false, body)
		if !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
			return fmt.Errorf("publish ack: %v", tok.Error())
		}
	}
}
