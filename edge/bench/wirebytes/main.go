// Command wirebytes measures the payload bytes per telemetry sample of the
// binary batch (edge/wire/batch) over a simulated day, beside the v1 JSON
// telemetry of the same samples. The target is at most 1.5 bytes per
// sample (docs/telemetry-path.md).
//
// Proving ground: a measurement of the product, never linked into it
// (docs/README.md, "The proving ground").
//
//	go run ./edge/bench/wirebytes [--gateways 2] [--hours 24] [--seed 1] [--rate 50] [--resolution-mg 0] [--json]
//
// It runs the simulated bowls (firmware-bridge/sim, as fast as they go,
// on the simulator's clock) through real bridges on in-memory links, 1.5
// bowls per gateway (gateway i has 1 + i%2 bowls), converts the readings
// to telemetry samples as edge/agent's sink does (weight_g = mg/1000, ...)
// with seqs numbered as the outbox numbers them, cuts one batch per
// gateway per simulated minute, and encodes it with batch.Split at
// wire.MaxPayload. The v1 baseline encodes the same samples as
// wire.TelemetryMessage JSON the way edge/forward does, at most 1000
// samples a message (the forwarder's default).
//
// Everything is deterministic for given flags: the figures are a
// compression ratio, not a timing.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"time"
)

const usage = `wirebytes: payload bytes per telemetry sample of the binary batch over a simulated day, beside v1 JSON

Usage: go run ./edge/bench/wirebytes [flags]

Runs simulated bowls (1.5 per gateway) for a simulated day on the simulator's
clock, cuts one batch per gateway per minute, and reports payload bytes per
sample, message sizes and messages per gateway per minute for the batch
(edge/wire/batch) and for v1 JSON telemetry of the same samples.

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wirebytes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	gateways := fs.Int("gateways", 2, "gateways; gateway i has 1 + i%2 bowls (an even number: 1.5 bowls per gateway)")
	hours := fs.Float64("hours", 24, "simulated hours from the simulator's default start (05:00)")
	seed := fs.Uint64("seed", 1, "simulator seed")
	rate := fs.Int("rate", 50, "load cell sample rate, Hz")
	resolution := fs.Int("resolution-mg", 0, "firmware resolution in mg (0: the simulator's default, 100)")
	noV1 := fs.Bool("no-v1", false, "skip the v1 JSON baseline")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *gateways < 1 || *hours <= 0 || *hours > 24*31 {
		fmt.Fprintln(stderr, "wirebytes: want --gateways >= 1 and 0 < --hours <= 744")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	p := params{Gateways: *gateways, Duration: time.Duration(*hours * float64(time.Hour)), Hours: *hours, Seed: *seed,
		RateHz: *rate, ResolutionMg: *resolution, V1: !*noV1}
	res, err := measure(ctx, p)
	if err != nil {
		fmt.Fprintln(stderr, "wirebytes:", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return 0
	}
	report(stdout, res)
	return 0
}

// report prints res as a table.
func report(w io.Writer, r result) {
	res := "the simulator's default"
	if r.Params.ResolutionMg > 0 {
		res = fmt.Sprintf("%d mg", r.Params.ResolutionMg)
	}
	fmt.Fprintf(w, "wirebytes: %d gateways, %d bowls (%.2f per gateway), %.1f h at %d Hz, seed %d, resolution %s\n",
		r.Params.Gateways, r.Bowls, float64(r.Bowls)/float64(r.Params.Gateways), r.Params.Hours, r.Params.RateHz, r.Params.Seed, res)
	kinds := make([]string, 0, len(r.SamplesByKind))
	for k := range r.SamplesByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "samples: %d over %d gateway-minutes (", r.Samples, r.GatewayMinutes)
	for i, k := range kinds {
		if i > 0 {
			fmt.Fprint(w, ", ")
		}
		fmt.Fprintf(w, "%s %d", k, r.SamplesByKind[k])
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "%-10s %12s %14s %14s %10s %10s %10s\n", "encoding", "bytes", "bytes/sample", "msgs/gw/min", "p50 B", "p99 B", "max B")
	row := func(name string, e encoding) {
		fmt.Fprintf(w, "%-10s %12d %14.3f %9.2f (max %d) %6d %10d %10d\n", name, e.Bytes, e.BytesPerSample, e.MessagesPerGatewayMinute, e.MaxPerGatewayMinute, e.P50Bytes, e.P99Bytes, e.MaxBytes)
	}
	row("batch v2", r.Batch)
	if r.V1 != nil {
		row("v1 JSON", *r.V1)
		fmt.Fprintf(w, "v1 JSON / batch: %.1fx the bytes\n", r.V1Ratio)
	}
}
