package main

import (
	"bytes"
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
