package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/edge/wire"
)

// fleetEnv names the environment variable that makes this program the
// gateways' process: it holds the fleetConfig as JSON. The cloud side
// starts the fleet as its own process so that memory and CPU are
// measured apart (one process per part, like the broker).
const fleetEnv = "BOWLINE_FLEET_GATEWAYS"

// fleetConfig is what the fleet process runs.
type fleetConfig struct {
	Broker          string
	Stack           string
	Gateways        int
	BowlsPerGateway float64
	Duration        time.Duration
	Interval        time.Duration
	AckTimeout      time.Duration
	Drain           time.Duration
	SampleHz        float64
	ConnectWorkers  int
}

// fleetResult is what the fleet process reports, as one JSON line on its
// stdout after the line "ready".
type fleetResult struct {
	Gateways, Bowls, Connected int
	ConnectSeconds             float64
	gatewayCounts
	GatewaysAcked  int
	AcksPerGateway [3]int64 // min, median, max
	UnackedSamples int64
	UnackedBatches int64
	OldestUnacked  time.Duration
	DrainSeconds   float64
	Lost           int64 // connection losses
	Process        procSample
	// Acked is every seq an ack named, per thing, clipped to what was
	// sent: what the cloud promised is durable.
	Acked map[string][]wire.Range
	// Sent is the last seq sent per thing.
	Sent map[string]uint64
}

// runFleet is the gateways' process: it connects every gateway, says
// "ready", publishes for Duration, waits up to Drain for the last acks
// and prints its fleetResult.
func runFleet(ctx context.Context, cfg fleetConfig, log *slog.Logger) error {
	var sampler procSampler
	sampler.start(ctx, os.Getpid(), true)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	gws := make([]*gateway, cfg.Gateways)
	bowls := 0
	for i := range gws {
		name := gatewayName(i)
		things := bowlsOf(name, i, cfg.BowlsPerGateway)
		bowls += len(things)
		gws[i] = newGateway(name, things, cfg.Stack, rng)
	}
	var lost atomic.Int64
	connStart := time.Now()
	work := make(chan *gateway)
	errs := make(chan error, cfg.Gateways)
	var wg sync.WaitGroup
	for range max(1, cfg.ConnectWorkers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				if err := g.connect(cfg, &lost); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, g := range gws {
		work <- g
	}
	close(work)
	wg.Wait()
	close(errs)
	res := fleetResult{Gateways: cfg.Gateways, Bowls: bowls, ConnectSeconds: time.Since(connStart).Seconds()}
	var connectErrs []error
	for err := range errs {
		connectErrs = append(connectErrs, err)
	}
	res.Connected = cfg.Gateways - len(connectErrs)
	if len(connectErrs) > 0 {
		log.Warn("gateways failed to connect", "failed", len(connectErrs), "first", connectErrs[0])
	}
	log.Info("fleet connected", "gateways", res.Connected, "seconds", res.ConnectSeconds)
	fmt.Println("ready")

	// Publish for Duration, each gateway at its own phase of the interval.
	start := time.Now()
	stopPublishing := start.Add(cfg.Duration)
	drainUntil := stopPublishing.Add(cfg.Drain)
	runCtx, cancel := context.WithDeadline(ctx, drainUntil)
	defer cancel()
	var running sync.WaitGroup
	for i, g := range gws {
		if !g.client.IsConnected() {
			continue
		}
		phase := time.Duration(int64(cfg.Interval) * int64(i) / int64(cfg.Gateways))
		running.Add(1)
		go func() {
			defer running.Done()
			g.run(runCtx, cfg, start.Add(phase), stopPublishing, rand.New(rand.NewPCG(uint64(i), 3)))
		}()
	}
	// The drain ends early once nothing is pending anywhere.
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case now := <-t.C:
				if now.Before(stopPublishing) {
					continue
				}
				if !slices.ContainsFunc(gws, func(g *gateway) bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.pending) > 0 }) {
					cancel()
					return
				}
			}
		}
	}()
	<-runCtx.Done()
	running.Wait()
	end := time.Now()
	res.DrainSeconds = max(0, end.Sub(stopPublishing).Seconds())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	res.Process = sampler.stop()

	res.Acked, res.Sent = map[string][]wire.Range{}, map[string]uint64{}
	var perGateway []int64
	for _, g := range gws {
		g.mu.Lock()
		c := g.counts
		res.Published += c.Published
		res.Pubacked += c.Pubacked
		res.PublishErrors += c.PublishErrors
		res.Resends += c.Resends
		res.SamplesSent += c.SamplesSent
		res.SamplesAcked += c.SamplesAcked
		res.PayloadBytes += c.PayloadBytes
		res.MaxPayload = max(res.MaxPayload, c.MaxPayload)
		res.Acks += c.Acks
		res.AcksOtherOutbox += c.AcksOtherOutbox
		res.AcksBad += c.AcksBad
		res.AckedBeyondSent += c.AckedBeyondSent
		if c.Acks > 0 {
			res.GatewaysAcked++
		}
		perGateway = append(perGateway, c.Acks)
		for _, sb := range g.pending {
			res.UnackedBatches++
			for _, tr := range sb.things {
				if !tr.acked {
					res.UnackedSamples += int64(tr.r.Last - tr.r.First + 1)
				}
			}
			res.OldestUnacked = max(res.OldestUnacked, end.Sub(sb.firstAt))
		}
		for _, bw := range g.bowls {
			res.Sent[bw.thing] = bw.next - 1
			res.Acked[bw.thing] = g.acked[bw.thing].rs
		}
		g.mu.Unlock()
		g.client.Disconnect(100)
	}
	slices.Sort(perGateway)
	if len(perGateway) > 0 {
		res.AcksPerGateway = [3]int64{perGateway[0], perGateway[len(perGateway)/2], perGateway[len(perGateway)-1]}
	}
	res.Lost = lost.Load()
	w := bufio.NewWriter(os.Stdout)
	if err := json.NewEncoder(w).Encode(res); err != nil {
		return err
	}
	return w.Flush()
}

// connect opens the gateway's connection with a persistent session and
// subscribes to its ack topic.
func (g *gateway) connect(cfg fleetConfig, lost *atomic.Int64) error {
	opts := paho.NewClientOptions().AddBroker(cfg.Broker).SetClientID(g.name).
		SetCleanSession(false).SetResumeSubs(true).SetAutoReconnect(true).SetOrderMatters(false).
		SetKeepAlive(5 * time.Minute).SetConnectTimeout(30 * time.Second).SetWriteTimeout(30 * time.Second).
		SetConnectionLostHandler(func(paho.Client, error) { lost.Add(1) })
	topic := wire.AckTopic(tenant, g.name)
	handler := func(_ paho.Client, m paho.Message) { g.onAck(m.Payload()) }
	// Subscribe again on every connect: a session the broker lost must
	// not leave the gateway deaf to its acks.
	opts.SetOnConnectHandler(func(c paho.Client) { c.Subscribe(topic, 1, handler) })
	g.client = paho.NewClient(opts)
	var err error
	for attempt := range 5 {
		tok := g.client.Connect()
		if tok.WaitTimeout(60*time.Second) && tok.Error() == nil {
			break
		}
		err = fmt.Errorf("gateway %s: connect: %v", g.name, tok.Error())
		time.Sleep(time.Duration(attempt+1) * 500 * time.Millisecond)
	}
	if !g.client.IsConnected() {
		return err
	}
	tok := g.client.Subscribe(topic, 1, handler)
	if !tok.WaitTimeout(60*time.Second) || tok.Error() != nil {
		return fmt.Errorf("gateway %s: subscribe %s: %v", g.name, topic, tok.Error())
	}
	return nil
}

// run publishes a batch at first and every interval after until stop,
// and sends again, at each wake, whatever is past the ack timeout, until
// ctx ends.
func (g *gateway) run(ctx context.Context, cfg fleetConfig, first, stop time.Time, rng *rand.Rand) {
	// The first batch carries the samples of the interval before first,
	// as if the gateway had been running.
	at := first
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		now := time.Now()
		for _, sb := range g.due(now, cfg.AckTimeout) {
			g.publish(sb, now, true)
		}
		if now.Before(stop) {
			sb, err := g.next(now, cfg.Interval, cfg.SampleHz, rng)
			if err != nil {
				g.mu.Lock()
				g.counts.PublishErrors++
				g.mu.Unlock()
			} else {
				sb.firstAt = now
				g.mu.Lock()
				g.pending = append(g.pending, sb)
				g.counts.SamplesSent += int64(sb.samples)
				g.counts.PayloadBytes += int64(len(sb.payload))
				g.counts.MaxPayload = max(g.counts.MaxPayload, len(sb.payload))
				g.mu.Unlock()
				g.publish(sb, now, false)
			}
		}
		at = at.Add(cfg.Interval)
		if !at.Before(stop) {
			// Past the last batch, wake often enough to resend in the drain.
			at = time.Now().Add(min(cfg.Interval, max(time.Second, cfg.AckTimeout/4)))
		}
	}
}

// publish sends sb at QoS 1 and waits for the PUBACK, which says only
// that the rules engine has the message: sb stays pending until an ack.
func (g *gateway) publish(sb *sentBatch, now time.Time, resend bool) {
	g.mu.Lock()
	sb.lastAt = now
	if resend {
		sb.resends++
		g.counts.Resends++
	}
	g.counts.Published++
	g.mu.Unlock()
	tok := g.client.Publish(g.topic, 1, false, sb.payload)
	ok := tok.WaitTimeout(60*time.Second) && tok.Error() == nil
	g.mu.Lock()
	if ok {
		g.counts.Pubacked++
	} else {
		g.counts.PublishErrors++
	}
	g.mu.Unlock()
}

// gatewayName is the i-th gateway's thing name.
func gatewayName(i int) string { return fmt.Sprintf("gw-%05d", i) }

// bowlsOf gives gateway i one bowl, or two for every other gateway, so
// that the fleet has perGateway bowls per gateway on average.
func bowlsOf(gw string, i int, perGateway float64) []string {
	n := int(math.Floor(float64(i+1)*perGateway) - math.Floor(float64(i)*perGateway))
	bowls := make([]string, max(1, n))
	for j := range bowls {
		bowls[j] = fmt.Sprintf("%s:%d", gw, j)
	}
	return bowls
}
