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
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/latency"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
)

func main() {
	fs := flag.NewFlagSet("bench emit", flag.ContinueOnError)
	emitters := fs.Int("emitters", 16, "concurrent emitters in each run")
	events := fs.Int("events", 100, "events each emitter emits in each run")
	tenants := fs.Int("tenants", 16, "tenants in the many-tenant runs")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "bench emit: naive one-event transactions vs Bowline's Emit under contention\n\nUsage: go run ./engine/bench/emit [flags]\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return
		}
		os.Exit(2)
	}
	if *emitters < 1 || *events < 1 || *tenants < 1 {
		fmt.Fprintln(os.Stderr, "bench emit: --emitters, --events and --tenants must be at least 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, *emitters, *events, *tenants)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench emit:", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
		return
	}
	rep.writeText(os.Stdout)
}

// Result is one measured run.
type Result struct {
	Design        string  `json:"design"` // "naive" or "bowline"
	Tenants       int     `json:"tenants"`
	Emitters      int     `json:"emitters"`
	Attempted     int     `json:"attempted"`
	Committed     int     `json:"committed"`
	Failed        int     `json:"failed"`
	Seconds       float64 `json:"seconds"`
	EventsPerSec  float64 `json:"events_per_sec"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	WriteCalls    int64   `json:"write_calls"`
	WritesPerEv   float64 `json:"write_calls_per_event"`
	FirstError    string  `json:"first_error,omitempty"`
	ChainsIntact  bool    `json:"chains_intact"`
	ChainsChecked int     `json:"chains_checked"`
}

// Report is the whole benchmark.
type Report struct {
	Results []Result `json:"results"`
	// Ratios are bowline/naive events per second, per scenario.
	RatioOneTenant   float64 `json:"ratio_one_tenant"`
	RatioManyTenants float64 `json:"ratio_many_tenants"`
}

func (r Report) writeText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\ttenants\temitters\tcommitted\tfailed\tevents/s\tp50 ms\tp99 ms\twrites/event\tchain\t")
	for _, x := range r.Results {
		chain := "intact"
		if !x.ChainsIntact {
			chain = "BROKEN"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.0f\t%.1f\t%.1f\t%.3f\t%s\t\n", x.Design, x.Tenants, x.Emitters, x.Committed, x.Failed, x.EventsPerSec, x.P50Ms, x.P99Ms, x.WritesPerEv, chain)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nbowline/naive events/s: one tenant %.1fx, %d tenants %.1fx\n", r.RatioOneTenant, r.Results[len(r.Results)-1].Tenants, r.RatioManyTenants)
}

// countingClient counts DynamoDB write calls.
type countingClient struct {
	*dynamodb.Client
	writes atomic.Int64
}

func (c *countingClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.writes.Add(1)
	return c.Client.TransactWriteItems(ctx, in, opts...)
}

func run(ctx context.Context, emitters, events, tenants int) (Report, error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		fmt.Fprintln(os.Stderr, "bench emit: starting DynamoDB Local")
		st, err := localstack.Start(ctx, localstack.Config{Services: []localstack.Service{localstack.DynamoDB}, Logger: log})
		if err != nil {
			return Report{}, fmt.Errorf("start DynamoDB Local: %w", err)
		}
		defer st.Close()
		if err := st.Setenv(); err != nil {
			return Report{}, err
		}
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	names, err := resources.New("bench" + hex.EncodeToString(b[:]))
	if err != nil {
		return Report{}, err
	}
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		return Report{}, err
	}
	if _, err := provision.Provision(ctx, cfg, names, provision.Options{Parts: []provision.Part{provision.Tables}}); err != nil {
		return Report{}, fmt.Errorf("provision %s: %w", names.Stack, err)
	}
	client := &countingClient{Client: dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)}
	cat := engine.Catalog{Types: []engine.EventType{{Name: "bench.emitted"}}}
	e, err := engine.New(engine.Config{
		Client: client, EventsTable: names.EventsTable(), InboxTable: names.InboxTable(),
		Catalog: cat, Logger: log, DefaultTimeout: time.Minute,
	})
	if err != nil {
		return Report{}, err
	}
	nv := naive{client: client, table: names.EventsTable()}
	designs := map[string]func(ctx context.Context, tenant string) error{
		"naive": func(ctx context.Context, tenant string) error {
			return nv.emit(ctx, tenant, "bench.emitted", map[string]any{"n": 1})
		},
		"bowline": func(ctx context.Context, tenant string) error {
			_, err := e.Emit(engine.WithTenant(ctx, tenant), "bench.emitted", map[string]any{"n": 1})
			return err
		},
	}
	verifier := engine.NewVerifier(client, names.EventsTable(), 0)
	var rep Report
	// Warm the JVM up so the first measured run is not the slowest.
	if _, err := measure(ctx, "bowline", designs["bowline"], verifier, client, "warmup", 4, 4, 20); err != nil {
		return Report{}, err
	}
	for _, sc := range []int{1, tenants} {
		for _, d := range []string{"naive", "bowline"} {
			r, err := measure(ctx, d, designs[d], verifier, client, fmt.Sprintf("%s-%d", d, sc), sc, emitters, events)
			if err != nil {
				return Report{}, err
			}
			rep.Results = append(rep.Results, r)
			fmt.Fprintf(os.Stderr, "bench emit: %s, %d tenant(s): %.0f events/s\n", d, sc, r.EventsPerSec)
		}
	}
	ratio := func(i int) float64 {
		if rep.Results[i].EventsPerSec == 0 {
			return 0
		}
		return rep.Results[i+1].EventsPerSec / rep.Results[i].EventsPerSec
	}
	rep.RatioOneTenant, rep.RatioManyTenants = ratio(0), ratio(2)
	return rep, nil
}

func measure(ctx context.Context, design string, emit func(context.Context, string) error, v *engine.Verifier, client *countingClient, prefix string, tenants, emitters, events int) (Result, error) {
	res := Result{Design: design, Tenants: tenants, Emitters: emitters, Attempted: emitters * events}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		wg        sync.WaitGroup
	)
	writes0 := client.writes.Load()
	start := time.Now()
	for i := 0; i < emitters; i++ {
		tenant := fmt.Sprintf("%s-%d", prefix, i%tenants)
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, events)
			var failed int
			var first error
			for j := 0; j < events; j++ {
				t0 := time.Now()
				err := emit(ctx, tenant)
				lat = append(lat, time.Since(t0))
				if err != nil {
					failed++
					if first == nil {
						first = err
					}
				}
			}
			mu.Lock()
			latencies = append(latencies, lat...)
			res.Failed += failed
			if first != nil && res.FirstError == "" {
				res.FirstError = first.Error()
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.Committed = res.Attempted - res.Failed
	res.Seconds = elapsed.Seconds()
	res.EventsPerSec = float64(res.Committed) / elapsed.Seconds()
	res.WriteCalls = client.writes.Load() - writes0
	if res.Committed > 0 {
		res.WritesPerEv = float64(res.WriteCalls) / float64(res.Committed)
	}
	lat := latency.Summarize(latencies)
	res.P50Ms, res.P99Ms = lat.P50, lat.P99
	res.ChainsIntact = true
	inLogs := 0
	for i := 0; i < min(tenants, emitters); i++ {
		rep, err := v.VerifyChain(ctx, fmt.Sprintf("%s-%d", prefix, i))
		if err != nil {
			return res, err
		}
		res.ChainsChecked++
		inLogs += rep.Events
		res.ChainsIntact = res.ChainsIntact && rep.Intact
	}
	// Every emit that reported success is in a log, and nothing else is.
	res.ChainsIntact = res.ChainsIntact && inLogs == res.Committed
	return res, nil
}
