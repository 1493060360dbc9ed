package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/wire/batch"
	"github.com/bowline-iot/bowline/internal/awscalls"
	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/pricing"
)

func TestBowlsPerGatewayIsOneAndAHalf(t *testing.T) {
	n := 0
	for i := range 10 {
		n += len(bowlsOf("gw", i, 1.5))
	}
	if n != 15 {
		t.Errorf("10 gateways have %d bowls; want 15", n)
	}
}

// TestCountsOf maps the meter's and the recorder's counts: acks from the
// HTTPS stand-in are HTTPS publishes, not broker publishes; run time and
// connected time are real time x speed.
func TestCountsOf(t *testing.T) {
	m := mqttbroker.Metered{
		Classes: map[string]mqttbroker.Traffic{
			"":       {Connects: 10, Subscribes: 10, Messages: 20, Units: 20},
			classAck: {PublishesIn: 5, PublishesOut: 5, Messages: 10, Units: 10},
		},
		BasicIngest:       mqttbroker.Traffic{PublishesIn: 100, Units: 100},
		HTTPSPublishes:    5,
		ConnectionSeconds: 60,
	}
	u := awscalls.UsageCounts{KinesisRecords: 100, KinesisPutUnits: 100, WRU: map[string]float64{"t": 5}}
	c := countsOf(m, u, 10, time.Minute)
	if c.Duration != 10*time.Minute || c.ConnectionSeconds != 600 {
		t.Errorf("duration, connection seconds = %v, %g; want 10m, 600", c.Duration, c.ConnectionSeconds)
	}
	if c.PublishesIn != 0 || c.HTTPPublishes != 5 || c.Acks != 5 || c.AckMessaging.Units != 10 || c.Messaging.Units != 20 {
		t.Errorf("counts = %+v; want 0 broker publishes in, 5 HTTPS publishes and acks, 10 ack units, 20 other units", c)
	}
	if c.BasicIngest.Messages != 100 || c.KinesisPutUnits != 100 || c.WRU["t"] != 5 {
		t.Errorf("basic ingest, put units, WRU = %d, %d, %v; want 100, 100, t:5", c.BasicIngest.Messages, c.KinesisPutUnits, c.WRU)
	}
}

func TestDesignReportPrints(t *testing.T) {
	e, err := pricing.Run(designCounts(), pricing.Model{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	printReport(&b, report{Source: "design", Run: "design", Estimate: e})
	for _, want := range []string{"total", "kinesis provisioned", "(not in total) kinesis on-demand", "iot.rules.basic_ingest", "goals:"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// TestSourceEncodesAMinuteOfEveryBowl: a gateway's batch decodes to a
// minute of samples of each of its bowls, seqs continuing across batches.
func TestSourceEncodesAMinuteOfEveryBowl(t *testing.T) {
	src := newSource("gw-1", []string{"gw-1:0", "gw-1:1"}, 10, 1, time.Unix(1_700_000_000, 0).UTC())
	for i := range 2 {
		payload, _, err := src.next(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		b, err := batch.Decode(payload)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if len(b.Things) != 2 || len(b.Things[0].Samples) != 600 || b.Things[1].Samples[0].Seq != uint64(1+600*i) {
			t.Fatalf("batch %d: %d things, %d samples, first seq %d; want 2, 600, %d", i, len(b.Things), len(b.Things[0].Samples), b.Things[1].Samples[0].Seq, 1+600*i)
		}
		t.Logf("batch %d: 1,200 samples of two bowls at 10 Hz in %d bytes", i, len(payload))
	}
}

// gbSeconds bills waiting at the memory size and CPU work at a full
// vCPU's memory below it: halving the memory halves the waiting's
// GB-seconds, never the CPU work's.
func TestGBSeconds(t *testing.T) {
	wall, cpu := 10*time.Millisecond, 2*time.Millisecond
	for _, tc := range []struct {
		mb   int
		want float64
	}{
		{512, 0.5*0.008 + lambdaFullCPUMB/1024.0*0.002},
		{256, 0.25*0.008 + lambdaFullCPUMB/1024.0*0.002},
		{2048, 2 * 0.010},
	} {
		if got := gbSeconds(wall, cpu, tc.mb); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("gbSeconds(%v, %v, %d) = %g; want %g", wall, cpu, tc.mb, got, tc.want)
		}
	}
	if got, want := gbSeconds(wall, 0, 512), 0.005; math.Abs(got-want) > 1e-12 {
		t.Errorf("gbSeconds with no CPU part = %g; want %g", got, want)
	}
}

// addEvents scales the pass's counts to the fleet's events over the run:
// 90 bowls x 8 events a day over 3 h = 90 events, from a pass of 45, so
// every count doubles.
func TestAddEventsScalesToTheFleetsEvents(t *testing.T) {
	c := pricing.Counts{Duration: 3 * time.Hour, Gateways: 60, Bowls: 90, RuleEvaluations: 10, WRU: map[string]float64{"telemetry": 1}}
	e := eventCounts{Events: 45, RuleEvaluations: 45, RuleUnits: 45, RuleActions: 45, RuleActionUnits: 45, Invocations: 45, PipesRequests: map[string]int64{"events": 45, "record-changes": 3},
		Handler: 45 * 10 * time.Millisecond,
		Usage:   awscalls.UsageCounts{KinesisRecords: 45, SQSFIFORequests: 162, SQSRequests: 6, WRU: map[string]float64{"events": 180}, RRU: map[string]float64{"app": 45}}}
	addEvents(&c, e, 512)
	if c.RuleEvaluations != 100 || c.RuleActions != 90 || c.Events.Records != 90 || c.KinesisRecords != 0 || c.PipesRequests != 96 || c.SQSFIFORequests != 324 || c.SQSRequests != 12 {
		t.Errorf("counts = rules %d, actions %d, events stream %d, telemetry stream %d, pipes %d, fifo %d, standard %d; want 100, 90, 90, 0, 96, 324, 12",
			c.RuleEvaluations, c.RuleActions, c.Events.Records, c.KinesisRecords, c.PipesRequests, c.SQSFIFORequests, c.SQSRequests)
	}
	if c.Events.Invocations != 90 || c.Events.BatchSize != 100 || c.LambdaGBSeconds != 0 {
		t.Errorf("events consumer = %d invocations, batch %d, telemetry GB-s %g; want 90, 100, 0", c.Events.Invocations, c.Events.BatchSize, c.LambdaGBSeconds)
	}
	if c.WRU["events"] != 360 || c.WRU["telemetry"] != 1 || c.RRU["app"] != 90 {
		t.Errorf("units = %v, %v; want events 360 WRU, telemetry 1, app 90 RRU", c.WRU, c.RRU)
	}
	if want := 2 * 0.45 * 0.5; math.Abs(c.Events.GBSeconds-want) > 1e-9 {
		t.Errorf("events GB-s = %g; want %g", c.Events.GBSeconds, want)
	}
}
