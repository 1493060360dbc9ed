// Command e2e is the e2e section of scripts/bench. It measures the commerce
// path end to end on the local stack: the latency from a payment webhook's
// POST to the completion of its DURABLE handlers (the moment each fake
// provider records its call), through the API's Emit, DynamoDB Streams, the
// relay, events.fifo, the worker and the inbox. It also reports the API's
// own order and webhook latencies.
//
// Proving ground: a measurement of the product, never linked into it
// (docs/README.md, "The proving ground").
//
//	go run ./cloud/bench/e2e [--n 200] [--concurrency 1] [--relay-poll 250ms] [--json]
//
// It starts its own emulators (DynamoDB Local, fauxqs) and provisions a
// fresh stack prefix, so it needs ./scripts/setup and nothing else.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/internal/latency"
	"github.com/bowline-iot/bowline/internal/localstack"
)

// Result is the --json output.
type Result struct {
	Iterations  int     `json:"iterations"`
	Concurrency int     `json:"concurrency"`
	RelayPollMS float64 `json:"relay_poll_ms"`
	OrderMS     Summary `json:"order_ms"`
	WebhookMS   Summary `json:"webhook_ms"`
	// EndToEndMS is webhook POST start -> the last of its three provider
	// calls (shopify_mirror, book_shipment, notify_buyer).
	EndToEndMS Summary `json:"end_to_end_ms"`
	// PaymentsPerSecond is completed payments over the measured wall time.
	PaymentsPerSecond float64 `json:"payments_per_second"`
}

// Summary is a latency distribution in milliseconds.
type Summary = latency.Summary

func main() {
	n := flag.Int("n", 200, "measured payments")
	warmup := flag.Int("warmup", 10, "payments before measuring")
	conc := flag.Int("concurrency", 1, "payments in flight at once")
	poll := flag.Duration("relay-poll", 250*time.Millisecond, "relay pause after an empty read (bowline relay's default is 250ms)")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "bench e2e: end-to-end latency of the commerce path on the local stack\n\nUsage: go run ./cloud/bench/e2e [flags]\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *n < 1 || *conc < 1 || *warmup < 0 || *poll <= 0 {
		fmt.Fprintln(os.Stderr, "bench e2e: --n and --concurrency must be at least 1, --warmup at least 0, --relay-poll positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, *n, *warmup, *conc, *poll)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench e2e: %v\n", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return
	}
	fmt.Printf("commerce path, %d payments, concurrency %d, relay poll %v\n", res.Iterations, res.Concurrency, *poll)
	for _, r := range []struct {
		name string
		s    Summary
	}{{"POST /v1/orders", res.OrderMS}, {"POST /v1/webhooks/payments", res.WebhookMS}, {"webhook -> handlers done", res.EndToEndMS}} {
		fmt.Printf("  %-28s p50 %7.1f ms  p90 %7.1f ms  p99 %7.1f ms  max %7.1f ms\n", r.name, r.s.P50, r.s.P90, r.s.P99, r.s.Max)
	}
	fmt.Printf("  %-28s %.1f/s\n", "payments completed", res.PaymentsPerSecond)
}

func run(ctx context.Context, n, warmup, conc int, poll time.Duration) (Result, error) {
	stack, err := localstack.StartScratch(ctx, localstack.Config{Services: []localstack.Service{localstack.DynamoDB, localstack.SQS}}, "bench")
	if err != nil {
		return Result{}, err
	}
	defer stack.Close()
	names, cfg := stack.Names, stack.AWS
	token, secret := "tok-"+randHex(8), "whsec-"+randHex(8)
	p, err := dev.StartCommerce(ctx, dev.CommerceConfig{
		AWS: cfg, Names: names, RelayPoll: poll,
		Settings: api.Settings{Tokens: map[string]string{token: "bench"}, WebhookSecret: secret},
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return Result{}, err
	}
	defer p.Close()
	c := &dev.Client{URL: p.APIURL, Token: token, Secret: secret}
	set := p.Fakes.Set

	type sample struct{ order, hook, e2e time.Duration }
	one := func(i int) (sample, error) {
		t0 := time.Now()
		id, err := c.Order(ctx, fmt.Sprintf("c%d", i), fmt.Sprintf("p%d", i), 4999)
		if err != nil {
			return sample{}, err
		}
		t1 := time.Now()
		ev, err := c.Pay(ctx, id, fmt.Sprintf("pay_%d_%s", i, randHex(3)), 4999)
		if err != nil {
			return sample{}, err
		}
		t2 := time.Now()
		done, err := waitCalls(ctx, set, ev)
		if err != nil {
			return sample{}, err
		}
		return sample{order: t1.Sub(t0), hook: t2.Sub(t1), e2e: done.Sub(t1)}, nil
	}
	for i := range warmup {
		if _, err := one(-1 - i); err != nil {
			return Result{}, fmt.Errorf("warmup: %w", err)
		}
	}
	var mu sync.Mutex
	var samples []sample
	var firstErr error
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for i := range next {
				s, err := one(i)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					samples = append(samples, s)
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return Result{}, firstErr
	}
	pick := func(f func(sample) time.Duration) Summary {
		var ds []time.Duration
		for _, s := range samples {
			ds = append(ds, f(s))
		}
		return summarize(ds)
	}
	return Result{
		Iterations: len(samples), Concurrency: conc, RelayPollMS: latency.Millis(poll),
		OrderMS:           pick(func(s sample) time.Duration { return s.order }),
		WebhookMS:         pick(func(s sample) time.Duration { return s.hook }),
		EndToEndMS:        pick(func(s sample) time.Duration { return s.e2e }),
		PaymentsPerSecond: float64(len(samples)) / elapsed.Seconds(),
	}, nil
}

// waitCalls waits until each provider has a successful call for event ev
// and returns when the last one arrived.
func waitCalls(ctx context.Context, set *fakes.Set, ev string) (time.Time, error) {
	subs := map[*fakes.Fake]string{set.Shopify: "shopify_mirror", set.Shipping: "book_shipment", set.Notify: "notify_buyer"}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var last time.Time
		found := 0
		for f, sub := range subs {
			for _, c := range f.Succeeded() {
				if c.IdempotencyKey == ev+":"+sub {
					found++
					if c.At.After(last) {
						last = c.At
					}
					break
				}
			}
		}
		if found == len(subs) {
			return last, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("event %s: %d of %d providers called after 2 minutes", ev, found, len(subs))
		}
		select {
		case <-ctx.Done():
			return time.Time{}, errors.Join(errors.New("interrupted"), ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func summarize(ds []time.Duration) Summary { return latency.Summarize(ds) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
