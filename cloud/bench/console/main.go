// Command console measures how fast the web console's pages answer with a
// day of data: 4 bowls, a simulated day of 1 Hz telemetry in Kinesis (read
// by the console's own stream reader), a day of bowl events and 100 orders
// in the chains, and 20 dead letters, on the local stack. Each page is
// fetched --n times in turn by a logged-in client; the result is latency
// percentiles per page. It is a measurement, not a test (docs/console.md).
//
// Proving ground: a measurement of the product, never linked into it
// (docs/README.md, "The proving ground").
//
//	go run ./cloud/bench/console [--n 50] [--json]
//
// It starts its own emulators (DynamoDB Local, fauxqs, kinesis-local) and
// provisions a fresh stack prefix, so it needs ./scripts/setup and nothing
// else.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/internal/latency"
	"github.com/bowline-iot/bowline/internal/localstack"
)

// The data set.
const (
	bowls       = 4
	tenants     = 2
	day         = 24 * time.Hour
	perRecord   = 60 // samples per Kinesis record: one a minute per bowl
	orders      = 100
	deadLetters = 20
)

// Page is one page's latency.
type Page struct {
	Path string          `json:"path"`
	MS   latency.Summary `json:"ms"`
	// Bytes is the size of the answer.
	Bytes int `json:"bytes"`
}

// Result is the --json output.
type Result struct {
	Bowls   int    `json:"bowls"`
	Samples int64  `json:"samples"`
	Events  int    `json:"events"`
	Pages   []Page `json:"pages"`
}

func main() {
	n := flag.Int("n", 50, "measured requests per page")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "bench console: page latency of the web console with 4 bowls and a day of data\n\nUsage: go run ./cloud/bench/console [flags]\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *n < 1 {
		fmt.Fprintln(os.Stderr, "bench console: --n must be at least 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, *n)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench console: %v\n", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return
	}
	fmt.Printf("console pages, %d bowls, %d samples read from the stream, %d events, %d requests per page\n", res.Bowls, res.Samples, res.Events, *n)
	for _, p := range res.Pages {
		fmt.Printf("  %-44s p50 %6.1f ms  p90 %6.1f ms  p99 %6.1f ms  max %6.1f ms  %4d KB\n", p.Path, p.MS.P50, p.MS.P90, p.MS.P99, p.MS.Max, p.Bytes/1024)
	}
}

func run(ctx context.Context, n int) (Result, error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	stack, err := localstack.StartScratch(ctx, localstack.Config{Services: []localstack.Service{localstack.DynamoDB, localstack.SQS, localstack.Kinesis}, Logger: log}, "bench")
	if err != nil {
		return Result{}, err
	}
	defer stack.Close()
	a, err := app.Open(app.Config{AWS: stack.AWS, Names: stack.Names, Logger: log})
	if err != nil {
		return Result{}, err
	}
	defer a.Close()
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-day)
	fmt.Fprintf(os.Stderr, "bench console: writing a day of data for %d bowls\n", bowls)
	events, err := seed(ctx, a, start)
	if err != nil {
		return Result{}, err
	}
	token := "ops-" + randHex(8)
	con, err := a.Console(ctx, app.ConsoleOptions{OpsToken: token, Logger: log})
	if err != nil {
		return Result{}, err
	}
	srv, err := a.APIWithConsole(api.Settings{WebhookSecret: "whsec-" + randHex(8), OpsToken: token}, con, log)
	if err != nil {
		return Result{}, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = con.Run(runCtx) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, err
	}
	go func() { _ = srv.ServeListener(runCtx, ln, nil) }()
	base := "http://" + ln.Addr().String()

	// Wait until the console has read the whole stream and every chain.
	want := int64(bowls) * int64(day/time.Second)
	for {
		s := con.Stats()
		if s.Samples >= want && s.Events >= events && s.Verified >= tenants {
			break
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := hc.PostForm(base+"/console/login", url.Values{"token": {token}})
	if err != nil {
		return Result{}, err
	}
	resp.Body.Close()
	res := Result{Bowls: bowls, Samples: con.Stats().Samples, Events: events}
	for _, path := range []string{
		"/console/", "/console/?live=1", "/console/bowls", "/console/bowls/bowl-000", "/console/bowls/bowl-000?window=24h",
		"/console/tenants", "/console/tenants/tenant-1", "/console/tenants/tenant-1/events/5",
		"/console/dead-letters", "/console/commerce", "/console/search?q=bowl-000",
	} {
		p, err := measure(ctx, hc, base+path, n)
		if err != nil {
			return Result{}, err
		}
		p.Path = path
		res.Pages = append(res.Pages, p)
	}
	return res, nil
}

// measure fetches url n times after a warm-up and summarises.
func measure(ctx context.Context, hc *http.Client, u string, n int) (Page, error) {
	var p Page
	var ds []time.Duration
	for i := -3; i < n; i++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		t0 := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return p, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if err != nil {
			return p, err
		}
		if resp.StatusCode != http.StatusOK || resp.Request.URL.Path == "/console/login" {
			return p, fmt.Errorf("GET %s: %d (ended at %s)", u, resp.StatusCode, resp.Request.URL)
		}
		p.Bytes = len(b)
		if i >= 0 {
			ds = append(ds, d)
		}
	}
	p.MS = latency.Summarize(ds)
	return p, nil
}

// seed writes the day: telemetry into Kinesis as ingest would, bowl events
// and commerce events through the engine, dead letters. It returns how
// many events it emitted.
func seed(ctx context.Context, a *app.App, start time.Time) (int, error) {
	dc := durable.DefaultConfig()
	dc.RollupEvery = 0
	consumer, err := a.TelemetryConsumer(dc, noAcks{})
	if err != nil {
		return 0, err
	}
	devs, err := a.Devices()
	if err != nil {
		return 0, err
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	events := 0
	emit := func(tenant, typ string, payload any) error {
		_, err := a.Engine.EmitEvent(engine.WithTenant(ctx, tenant), engine.Event{Type: typ, Payload: payload})
		if err == nil {
			events++
		}
		return err
	}
	for b := range bowls {
		thing, tenant := fmt.Sprintf("bowl-%03d", b), fmt.Sprintf("tenant-%d", b%tenants+1)
		if _, err := devs.Register(ctx, thing, tenant); err != nil {
			return 0, err
		}
		// The day's plan: refills at 07:00 and 18:30, four meals per pet.
		type meal struct {
			at    time.Time
			pet   string
			grams float64
		}
		var meals []meal
		for pet := range 2 {
			tag := fmt.Sprintf("90021500000%04d", b*10+pet)
			for k := range 4 {
				meals = append(meals, meal{start.Add(time.Duration(6+4*k+pet) * time.Hour), tag, 15 + rng.Float64()*25})
			}
		}
		refills := []time.Time{start.Add(7 * time.Hour), start.Add(18*time.Hour + 30*time.Minute)}
		level := 250.0
		// A minute of 1 Hz samples per batch, through the rule's own
		// transform into record format 2, handed to the telemetry consumer
		// as the event source would: it writes the rollups the console
		// reads.
		var recs []durable.Record
		var samples []batch.Sample
		seq := uint64(1)
		for s := 0; s < int(day/time.Second); s++ {
			t := start.Add(time.Duration(s) * time.Second)
			for _, m := range meals {
				if d := t.Sub(m.at); d >= 0 && d < 5*time.Minute {
					level -= m.grams / 300
				}
			}
			for _, r := range refills {
				if d := t.Sub(r); d >= 0 && d < 10*time.Second {
					level = math.Min(400, level+15)
				}
			}
			samples = append(samples, batch.Sample{Seq: seq, At: t, Kind: "weight_g", Value: int64(math.Round((level + rng.NormFloat64()*0.1) * 10)), Scale: 1})
			seq++
			if len(samples) == perRecord {
				payload, err := batch.Encode(batch.Batch{Outbox: "bench", SentAt: t, Things: []batch.Series{{Thing: thing, Samples: samples}}})
				if err != nil {
					return 0, err
				}
				topic := wire.BasicIngestTopic(wire.RuleName(a.Names.Stack, wire.TelemetryRule), wire.Topic{Tenant: tenant, Thing: thing, Kind: wire.KindBatch})
				_, inner, _ := wire.SplitBasicIngest(topic)
				data, key, err := rules.Telemetry.Evaluate(inner, payload, t)
				if err != nil {
					return 0, err
				}
				recs = append(recs, durable.Record{Data: data, PartitionKey: key, SequenceNumber: fmt.Sprintf("%020d", len(recs)), ShardID: "bench", ArrivalTime: t})
				samples = nil
			}
		}
		for len(recs) > 0 {
			chunk := recs[:min(100, len(recs))]
			recs = recs[len(chunk):]
			res, err := consumer.Handle(ctx, chunk)
			if err != nil {
				return 0, fmt.Errorf("consume telemetry: %w", err)
			}
			if len(res.BatchItemFailures) > 0 {
				return 0, fmt.Errorf("consume telemetry: %s failed", res.BatchItemFailures[0].ItemIdentifier)
			}
		}
		for i, m := range meals {
			p := catalog.MealFinished{
				MealFinished: wire.MealFinished{PetTag: m.pet, GramsEaten: math.Round(m.grams*10) / 10, DurationS: 300, StartedAt: m.at},
				Ingested:     catalog.Ingested{Thing: thing, DeviceAt: m.at.Add(5 * time.Minute), DeviceEventID: fmt.Sprintf("meal-%d", i), DeviceSeq: uint64(i + 1)}}
			if err := emit(tenant, catalog.TypeMealFinished, p); err != nil {
				return 0, err
			}
		}
		for i, r := range refills {
			p := catalog.Refilled{
				Refilled: wire.Refilled{GramsAdded: 150, LevelG: 380},
				Ingested: catalog.Ingested{Thing: thing, DeviceAt: r, DeviceEventID: fmt.Sprintf("refill-%d", i), DeviceSeq: uint64(20 + i)}}
			if err := emit(tenant, catalog.TypeRefilled, p); err != nil {
				return 0, err
			}
		}
	}
	for i := range orders {
		tenant := fmt.Sprintf("tenant-%d", i%tenants+1)
		id := fmt.Sprintf("ord-%04d", i)
		items := []catalog.Item{{SKU: "TAG-001", Qty: 1}}
		created := catalog.OrderCreated{OrderID: id, CustomerID: "c1", PetID: "p1", Items: items, AmountCents: 4999, Currency: "USD"}
		if err := emit(tenant, catalog.TypeOrderCreated, created); err != nil {
			return 0, err
		}
		paid := catalog.PaymentCompleted{OrderID: id, PaymentID: "pay-" + id, AmountCents: 4999, Currency: "USD", CustomerID: "c1", PetID: "p1", Items: items}
		if err := emit(tenant, catalog.TypePaymentCompleted, paid); err != nil {
			return 0, err
		}
	}
	for i := range deadLetters {
		l := deadletter.Letter{Tenant: fmt.Sprintf("tenant-%d", i%tenants+1), EventID: fmt.Sprintf("01BENCH%04d", i), EventType: catalog.TypePaymentCompleted,
			Subscription: catalog.SubShopifyMirror, Error: "shopify POST /orders: status 503: down", Attempts: 5}
		if err := a.DeadLetters.Record(ctx, l); err != nil {
			return 0, err
		}
	}
	return events, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// noAcks drops the consumer's acknowledgements: no gateway listens here.
type noAcks struct{}

func (noAcks) Publish(context.Context, string, []byte, int) error { return nil }
