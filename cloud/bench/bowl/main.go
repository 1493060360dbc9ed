// Command bowl is the bowl section of scripts/bench. It measures the bowl
// path end to end on the local stack, with the whole system of `bowline dev`
// running (cloud/dev): simulated bowls, one edge agent each, the broker,
// ingest, the events relay, the worker and the record_intake subscriber.
//
// Proving ground: a measurement of the product, never linked into it
// (docs/README.md, "The proving ground").
//
// For every bowl.meal_finished it takes three instants on the wall clock:
//
//   - publish: the broker receives the agent's PUBLISH to the events
//     rule's Basic Ingest topic (and PUBACKs it), seen by a plain
//     subscriber beside the rule stand-in;
//   - emitted: ingest has the event durable, after engine.Emit committed
//     it and its seq row was written (ingest's Observer.Acked), having
//     read it from the events stream;
//   - done: the record_intake handler returned (a wrapper around it).
//
// and reports p50/p90/p99/max of publish->done (the end-to-end latency),
// publish->emitted (rule stand-in, events stream, event source, ingest) and emitted->done (stream, relay, events.fifo,
// worker, inbox, handler). The bowls' telemetry runs alongside, so the
// figures are under that load; --speed and --rate set how much.
//
//	go run ./cloud/bench/bowl [--bowls 6] [--pets 4] [--speed 1200] [--days 2] [--rate 2] [--start-hour 6] [--json]
//
// It starts its own emulators, so it needs ./scripts/setup and nothing
// else.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/latency"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Result is the --json output.
type Result struct {
	Bowls       int     `json:"bowls"`
	PetsPerBowl int     `json:"pets_per_bowl"`
	Speed       float64 `json:"speed"`
	RateHz      int     `json:"rate_hz"`
	SimDays     float64 `json:"sim_days"`
	RelayPollMS float64 `json:"relay_poll_ms"`
	// Meals is how many bowl.meal_finished events were measured.
	Meals int `json:"meals"`
	// OfferedSamplesPerSecond is what the bowls produce (bowls x rate x
	// speed); SamplesPerSecond what reached Kinesis over the run. Events go
	// first at the edge, so a telemetry backlog does not delay meals.
	OfferedSamplesPerSecond float64 `json:"offered_samples_per_second"`
	SamplesPerSecond        float64 `json:"samples_per_second"`
	// EndToEndMS is broker receipt of the edge's PUBLISH -> record_intake
	// done; IngestMS the same receipt -> ingest's ack after Emit;
	// DeliveryMS that ack -> record_intake done.
	EndToEndMS Summary `json:"end_to_end_ms"`
	IngestMS   Summary `json:"ingest_ms"`
	DeliveryMS Summary `json:"delivery_ms"`
}

// Summary is a latency distribution in milliseconds.
type Summary = latency.Summary

func main() {
	bowls := flag.Int("bowls", 6, "simulated bowls, each with its own agent")
	pets := flag.Int("pets", 4, "pets per bowl (1..4): more pets, more meals")
	speed := flag.Float64("speed", 1200, "simulated seconds per real second")
	days := flag.Float64("days", 2, "simulated days")
	rate := flag.Int("rate", 2, "load cell sample rate in Hz (1..50)")
	startHour := flag.Int("start-hour", 6, "simulated time of day (UTC hour) the bowls boot, yesterday")
	poll := flag.Duration("relay-poll", dev.DefaultRelayPoll, "relay pause after an empty stream read (bowline dev's default)")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "bench bowl: end-to-end latency of the bowl path (edge publish -> record_intake done) on the local stack\n\nUsage: go run ./cloud/bench/bowl [flags]\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *bowls < 1 || *pets < 1 || *pets > 4 || *speed <= 0 || *days <= 0 || *rate < 1 || *rate > 50 || *poll <= 0 || *startHour < 0 || *startHour > 23 {
		fmt.Fprintln(os.Stderr, "bench bowl: want --bowls >= 1, --pets 1..4, --speed and --days > 0, --rate 1..50, --relay-poll > 0, --start-hour 0..23")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, *bowls, *pets, *speed, *days, *rate, *startHour, *poll)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench bowl: %v\n", err)
		os.Exit(1)
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(res)
		return
	}
	fmt.Printf("bowl path on the local stack: %d bowls x %d pets, %g simulated days from %02d:00 at %gx, %d Hz telemetry (offered %.0f samples/s, %.0f/s reached Kinesis), relay poll %v\n",
		res.Bowls, res.PetsPerBowl, res.SimDays, *startHour, res.Speed, res.RateHz, res.OfferedSamplesPerSecond, res.SamplesPerSecond, *poll)
	fmt.Printf("%d meals measured\n", res.Meals)
	p := func(name string, s Summary) {
		fmt.Printf("  %-34s p50 %7.1f ms  p90 %7.1f ms  p99 %7.1f ms  max %7.1f ms\n", name, s.P50, s.P90, s.P99, s.Max)
	}
	p("edge publish -> record_intake done", res.EndToEndMS)
	p("edge publish -> ingest ack (Emit)", res.IngestMS)
	p("ingest ack -> record_intake done", res.DeliveryMS)
}

// stamps are the instants of the meals, keyed by thing and device event id
// (publish, done) or thing and seq (emitted).
type stamps struct {
	mu        sync.Mutex
	published map[string]time.Time // thing/id
	seqOf     map[string]string    // thing/seq -> thing/id
	emitted   map[string]time.Time // thing/seq
	done      map[string]time.Time // thing/id
}

func key(thing, id string) string { return thing + "/" + id }

func run(ctx context.Context, bowls, pets int, speed, days float64, rate, startHour int, poll time.Duration) (Result, error) {
	st := &stamps{published: map[string]time.Time{}, seqOf: map[string]string{}, emitted: map[string]time.Time{}, done: map[string]time.Time{}}
	names, err := resources.New("bb" + randHex(3))
	if err != nil {
		return Result{}, err
	}
	simDur := time.Duration(days * 24 * float64(time.Hour))
	cfg := dev.Config{
		Names: names, Bowls: bowls, PetsPerBowl: pets, Speed: speed, RateHz: rate, Duration: simDur,
		// Yesterday at --start-hour: readings lie at most Duration ahead of
		// the wall clock, which dev's ingest accepts at speeds above 1.
		Start:    time.Now().UTC().Truncate(24 * time.Hour).Add(-24*time.Hour + time.Duration(startHour)*time.Hour),
		RingSize: 1<<16 - 1, APIAddr: "127.0.0.1:0", RelayPoll: poll,
		WrapHandler: func(sub string, h engine.Handler) engine.Handler {
			if sub != "record_intake" {
				return h
			}
			return func(ctx context.Context, env engine.Envelope) error {
				err := h(ctx, env)
				if err == nil {
					in, _ := catalog.IngestedOf(env)
					now := time.Now()
					st.mu.Lock()
					if _, ok := st.done[key(in.Thing, in.DeviceEventID)]; !ok {
						st.done[key(in.Thing, in.DeviceEventID)] = now
					}
					st.mu.Unlock()
				}
				return err
			}
		},
		IngestObserver: ackObserver{st: st},
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	}
	// The tap subscribes once the system runs; a meal published before
	// that would not be measured (the first minutes hold none).
	sys, err := dev.Start(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	defer sys.Close()
	tap, err := subscribeTap(sys.Report().Endpoints.MQTT, rules.Events.BasicIngestFilter(names.Stack), st)
	if err != nil {
		return Result{}, err
	}
	defer tap.Disconnect(100)
	began := time.Now()
	select {
	case <-sys.SimDone():
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	// Let the last meals through: wait until every published meal is done,
	// or 60 s without progress.
	last, lastN := time.Now(), -1
	for {
		st.mu.Lock()
		pending := 0
		for k := range st.published {
			if _, ok := st.done[k]; !ok {
				pending++
			}
		}
		n := len(st.done)
		st.mu.Unlock()
		if pending == 0 {
			break
		}
		if n != lastN {
			last, lastN = time.Now(), n
		}
		if time.Since(last) > 60*time.Second {
			return Result{}, fmt.Errorf("%d published meals never reached record_intake", pending)
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	elapsed := time.Since(began)
	f := sys.Figures(ctx)

	st.mu.Lock()
	defer st.mu.Unlock()
	emittedAt := map[string]time.Time{}
	for seqKey, at := range st.emitted {
		if k, ok := st.seqOf[seqKey]; ok {
			emittedAt[k] = at
		}
	}
	var e2e, ing, del []time.Duration
	for k, pub := range st.published {
		done, ok := st.done[k]
		if !ok {
			continue
		}
		e2e = append(e2e, done.Sub(pub))
		if em, ok := emittedAt[k]; ok {
			ing = append(ing, em.Sub(pub))
			del = append(del, done.Sub(em))
		}
	}
	return Result{
		Bowls: bowls, PetsPerBowl: pets, Speed: speed, RateHz: rate, SimDays: days, RelayPollMS: latency.Millis(poll),
		Meals: len(e2e), SamplesPerSecond: float64(f.Samples) / elapsed.Seconds(),
		OfferedSamplesPerSecond: float64(bowls*rate) * speed,
		EndToEndMS:              summarize(e2e), IngestMS: summarize(ing), DeliveryMS: summarize(del),
	}, nil
}

// subscribeTap subscribes a plain client to filter, the events rule's
// Basic Ingest topics, and stamps each meal's arrival at the broker.
func subscribeTap(broker, filter string, st *stamps) (paho.Client, error) {
	o := paho.NewClientOptions().AddBroker(broker).SetClientID("bench-bowl-tap-" + randHex(4)).SetCleanSession(true)
	c := paho.NewClient(o)
	if t := c.Connect(); !t.WaitTimeout(10*time.Second) || t.Error() != nil {
		return nil, fmt.Errorf("tap connect to %s: %v", broker, t.Error())
	}
	t := c.Subscribe(filter, 0, func(_ paho.Client, m paho.Message) {
		now := time.Now()
		var ev struct {
			Thing string `json:"thing"`
			Seq   uint64 `json:"seq"`
			ID    string `json:"id"`
			Type  string `json:"type"`
		}
		if json.Unmarshal(m.Payload(), &ev) != nil || ev.Type != wire.TypeMealFinished {
			return
		}
		k := key(ev.Thing, ev.ID)
		st.mu.Lock()
		if _, ok := st.published[k]; !ok {
			st.published[k] = now
			st.seqOf[key(ev.Thing, fmt.Sprint(ev.Seq))] = k
		}
		st.mu.Unlock()
	})
	if !t.WaitTimeout(10*time.Second) || t.Error() != nil {
		return nil, fmt.Errorf("tap subscribe: %v", t.Error())
	}
	return c, nil
}

// ackObserver stamps ingest's acknowledgement of each event message.
type ackObserver struct {
	ingest.NopObserver
	st *stamps
}

func (a ackObserver) Acked(x ingest.Ack) {
	if x.Kind != wire.KindEvents {
		return
	}
	now := time.Now()
	a.st.mu.Lock()
	if _, ok := a.st.emitted[key(x.Thing, fmt.Sprint(x.Seq))]; !ok {
		a.st.emitted[key(x.Thing, fmt.Sprint(x.Seq))] = now
	}
	a.st.mu.Unlock()
}

func summarize(ds []time.Duration) Summary { return latency.Summarize(ds) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
