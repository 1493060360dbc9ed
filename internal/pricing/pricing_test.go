package pricing

import (
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

func TestTablesAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Prices {
		if seen[p.ID] {
			t.Errorf("price %s twice", p.ID)
		}
		seen[p.ID] = true
		if u, err := url.Parse(p.Source); err != nil || u.Scheme != "https" {
			t.Errorf("price %s source %q: want an https URL", p.ID, p.Source)
		}
		if p.ReadOn != ReadOn || p.Unit == "" || p.Per <= 0 || len(p.Tiers) == 0 {
			t.Errorf("price %s = %+v: want read on %s, a unit, per > 0 and tiers", p.ID, p, ReadOn)
		}
		if p.Status != "verified" && !strings.HasPrefix(p.Status, "unverified") {
			t.Errorf("price %s status %q: want verified or unverified: why", p.ID, p.Status)
		}
		for i, tr := range p.Tiers {
			last := i == len(p.Tiers)-1
			if last != (tr.UpTo == 0) || (i > 0 && !last && tr.UpTo <= p.Tiers[i-1].UpTo) {
				t.Errorf("price %s tiers %+v: want increasing bounds and an unbounded last tier", p.ID, p.Tiers)
			}
		}
	}
	for _, q := range Quotas {
		if seen[q.ID] {
			t.Errorf("quota %s twice", q.ID)
		}
		seen[q.ID] = true
		if !strings.HasPrefix(q.Source, "https://") || q.ReadOn != ReadOn || q.Unit == "" {
			t.Errorf("quota %s = %+v: want a source, read on %s and a unit", q.ID, q, ReadOn)
		}
		if q.Default == 0 && !strings.HasPrefix(q.Status, "unverified") {
			t.Errorf("quota %s has no default but status %q", q.ID, q.Status)
		}
	}
}

func TestTiers(t *testing.T) {
	msg := PriceOf(IoTMessaging)
	for _, tc := range []struct {
		n, want float64
	}{
		{0, 0},
		{1e6, 1.00},
		{1e9, 1000},
		{2e9, 1000 + 800},
		{5e9, 1000 + 4*800},
		{6e9, 1000 + 4*800 + 700},
	} {
		if got := msg.Cost(tc.n); !near(got, tc.want) {
			t.Errorf("messaging Cost(%g) = %g; want %g", tc.n, got, tc.want)
		}
	}
	arm := PriceOf(LambdaDurationARM)
	want := 7.5e9*0.0000133334 + 11.25e9*0.0000120001 + 1e9*0.0000106667
	if got := arm.Cost(19.75e9); !near(got, want) {
		t.Errorf("lambda arm64 Cost(19.75e9 GB-s) = %g; want %g", got, want)
	}
}

// fixed is one hour of 1,000 gateways and 1,500 bowls with round numbers,
// so that every line can be worked out by hand.
func fixed() Counts {
	return Counts{
		Duration: time.Hour, Gateways: 1000, Bowls: 1500,
		ConnectionSeconds: 1000 * 3600, MaxConnections: 1000,
		Messaging:        MessageCount{Messages: 1000, Units: 1000},
		BasicIngest:      MessageCount{Messages: 60_000, Units: 60_000},
		MaxConnPublishes: 66, MaxConnBytes: 66 * 3000, MaxConnSubscriptions: 1, MaxMessageBytes: 3000,
		Acks: 6000, HTTPPublishes: 6000, PublishesOut: 6000, AckMessaging: MessageCount{Messages: 12_000, Units: 12_000},
		RuleEvaluations: 60_000, RuleUnits: 60_000, RuleActions: 60_000, RuleActionUnits: 60_000,
		KinesisRecords: 60_000, KinesisBytes: 60_000 * 3500, KinesisBilledBytes: 60_000 * 4096, KinesisPutUnits: 60_000,
		KinesisBytesRead: 60_000 * 3500, KinesisGetRecords: 3600, RunShards: 1,
		WRU: map[string]float64{"telemetry_state": 15_000}, MaxKeyWRU: 6,
		LambdaInvocations: 600, LambdaGBSeconds: 10,
	}
}

func line(t *testing.T, e Estimate, comp string, inTotal bool) Line {
	t.Helper()
	for _, l := range e.Lines {
		if l.Component == comp && l.InTotal == inTotal {
			return l
		}
	}
	t.Fatalf("no line %s (in total %v)", comp, inTotal)
	return Line{}
}

func TestEstimateFromFixedCounts(t *testing.T) {
	e, err := Run(fixed(), Model{})
	if err != nil {
		t.Fatal(err)
	}
	// At 1M bowls: 666,666.7 gateways; a month is 730 run-hours, so each
	// run count per gateway is multiplied by 730 and by 666.67 gateways
	// per run gateway.
	const gw = 1e6 / 1.5
	month := 730.0
	perGW := gw / 1000 * month
	perBowl := 1e6 / 1500 * month
	i := 2
	check := func(comp string, inTotal bool, wantMonthly float64) {
		t.Helper()
		l := line(t, e, comp, inTotal)
		if !near(l.Monthly[i], wantMonthly) {
			t.Errorf("%s at 1M = $%.4f a month; want $%.4f", comp, l.Monthly[i], wantMonthly)
		}
		if !near(l.PerBowl[i], wantMonthly/1e6) {
			t.Errorf("%s at 1M = $%g per bowl; want $%g", comp, l.PerBowl[i], wantMonthly/1e6)
		}
	}
	check(CompConnectivity, true, 1000*60*perGW*0.08/1e6)
	// Messaging and acks share the tiers: 13,000 units x perGW = 6.33e9
	// units a month, past the first two tiers.
	units := 13_000 * perGW
	tiered := 1000 + 4000*0.80 + (units-5e9)/1e6*0.70
	check(CompMessaging, true, tiered*1000/13_000)
	check(CompAcks, true, tiered*12_000/13_000)
	check(CompRules, true, 60_000*perGW*(0.15+0.15)/1e6)
	// Shards: 60,000 records an hour per 1,000 gateways is 11,111 records/s
	// and 38.9 MB/s at 1M bowls; at peak x2 and 50 % target the bytes need
	// ceil(2 * 2 * 60,000 * 3,500 * 666.67 / 3600 / 2^20) shards.
	bytesPerSec := 60_000.0 * 3500 * (1e6 / 1500) / 3600
	shards := math.Ceil(bytesPerSec * 2 / (1 << 20) / 0.5)
	if e.Shards[i] != int(shards) {
		t.Fatalf("shards at 1M = %d; want %v", e.Shards[i], shards)
	}
	check(CompKinesis, true, shards*730*(0.015+0.02)+60_000*perGW*0.014/1e6)
	in := 60_000 * 4096 * perBowl / (1 << 30)
	check(CompKinesis, false, 730*0.04+in*0.08+60_000*3500*perBowl/(1<<30)*0.04+in*144/730*0.10)
	check(CompDynamoDB, true, 15_000*perBowl*0.625/1e6)
	check(CompCompute, true, 600*perGW*0.20/1e6+10*perBowl*0.0000133334)

	var total float64
	for _, l := range e.Lines {
		if l.InTotal {
			total += l.PerBowl[i]
		}
	}
	if !near(e.Total[i], total) {
		t.Errorf("total at 1M = %g; want the sum of the lines %g", e.Total[i], total)
	}
	if l := line(t, e, CompRules, true); len(l.Unverified) != 2 {
		t.Errorf("rules line unverified prices = %v; want both rule prices", l.Unverified)
	}
}

func quota(t *testing.T, e Estimate, id string) QuotaLine {
	t.Helper()
	for _, q := range e.Quotas {
		if q.ID == id {
			return q
		}
	}
	t.Fatalf("no quota %s", id)
	return QuotaLine{}
}

func TestQuotaLoadsAndFlags(t *testing.T) {
	e, err := Run(fixed(), Model{})
	if err != nil {
		t.Fatal(err)
	}
	// Basic Ingest: 60 publishes per gateway-hour; 10M bowls are 6.67M
	// gateways: 111,111/s, x2 at peak = 222,222/s, 1,111 % of 20,000.
	bi := quota(t, e, QIoTBasicIngest)
	if want := 60.0 / 3600 * 1e7 / 1.5 * 2; !near(bi.Load[3], want) {
		t.Errorf("basic ingest load at 10M = %g; want %g", bi.Load[3], want)
	}
	if bi.Flags[3] != "needs raise" {
		t.Errorf("basic ingest flag at 10M = %q; want needs raise", bi.Flags[3])
	}
	// At 100k: 11,111/s x 2 / 1.5 ... = 2,222/s: 11 %, no flag.
	if bi.Flags[1] != "" {
		t.Errorf("basic ingest flag at 100k = %q (%.0f %%); want none", bi.Flags[1], bi.Percent[1])
	}
	// Per connection quotas do not grow with the fleet.
	pc := quota(t, e, QIoTConnPublishRate)
	if !near(pc.Load[0], pc.Load[3]) || !near(pc.Load[0], 66.0/3600*2) {
		t.Errorf("per-connection publish load = %v; want %g at every scale", pc.Load, 66.0/3600*2)
	}
	// A non-adjustable quota past its default is flagged at every scale.
	c := fixed()
	c.MaxConnPublishes = 3600 * 60
	e, err = Run(c, Model{})
	if err != nil {
		t.Fatal(err)
	}
	if f := quota(t, e, QIoTConnPublishRate).Flags; f[0] != "NOT RAISABLE" || f[3] != "NOT RAISABLE" {
		t.Errorf("per-connection publish flags at 120/s = %v; want NOT RAISABLE", f)
	}
	var met bool
	for _, g := range e.Goals {
		if strings.HasPrefix(g.Name, "at 10M") {
			met = g.Met
		}
	}
	if met {
		t.Errorf("10M goal met with a non-raisable quota over its default: %+v", e.Goals)
	}
}

func TestNotMeasuredStagesFailTheCostGoal(t *testing.T) {
	c := fixed()
	c.NotMeasured = map[Stage]string{StageConsumer: "lands with cloud/durable"}
	e, err := Run(c, Model{GoalUSD: 1})
	if err != nil {
		t.Fatal(err)
	}
	if line(t, e, CompDynamoDB, true).Measured {
		t.Errorf("dynamodb line measured with the consumer not measured")
	}
	if e.Goals[0].Met {
		t.Errorf("cost goal met with a stage not measured: %+v", e.Goals[0])
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	if _, err := Run(Counts{}, Model{}); err == nil {
		t.Errorf("Run(zero counts) = nil error; want one")
	}
	if _, err := Run(fixed(), Model{Kinesis: "serverless"}); err == nil {
		t.Errorf("Run(kinesis serverless) = nil error; want one")
	}
}

// TestDocsListEveryPriceAndQuota keeps docs/cost.md's copy of the tables
// in step with the Go tables: every id, with each price's first tier.
func TestDocsListEveryPriceAndQuota(t *testing.T) {
	b, err := os.ReadFile("../../docs/cost.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| `") {
			id := strings.TrimPrefix(l, "| `")
			rows[id[:strings.Index(id, "`")]] = l
		}
	}
	for _, p := range Prices {
		want := fmt.Sprintf("%g per %g", p.Tiers[0].USD, p.Per)
		if !strings.Contains(rows[p.ID], want) || !strings.Contains(rows[p.ID], p.Source) {
			t.Errorf("docs/cost.md row of price %s = %q; want %q and its source", p.ID, rows[p.ID], want)
		}
	}
	for _, q := range Quotas {
		if !strings.Contains(rows[q.ID], q.Source) {
			t.Errorf("docs/cost.md has no row for quota %s with its source", q.ID)
		}
	}
}

// With the mapping's batch size, invocations at scale follow the records
// per shard: full batches on a busy shard, one per record on a quiet one,
// never one per record of a fleet.
func TestInvocationsFollowRecordsPerShard(t *testing.T) {
	c := Counts{Duration: time.Hour, Gateways: 1, Bowls: 1, KinesisRecords: 3600, LambdaInvocations: 3600}
	for _, tc := range []struct {
		gateways float64
		shards   int
		perSec   float64 // invocations per second, all shards
	}{
		{gateways: 1000, shards: 4, perSec: 4 * 2.5}, // 250 records/s per shard: batches of 100
		{gateways: 1, shards: 1, perSec: 1},          // 1 record/s: one batch a second
		{gateways: 0.5, shards: 1, perSec: 0.5},      // a record every 2 s: one invocation each
	} {
		s := scale{gwRate: tc.gateways / c.Duration.Seconds()}
		withBatch := c
		withBatch.LambdaBatchSize, withBatch.LambdaBatchWindow = 100, time.Second
		if got, want := invocationsPerMonth(withBatch, s, tc.shards), tc.perSec*SecondsPerMonth; math.Abs(got-want) > 1e-6*want {
			t.Errorf("%g gateways on %d shards: invocations = %g; want %g", tc.gateways, tc.shards, got, want)
		}
		s.gwMonth = s.gwRate * SecondsPerMonth
		if got, want := invocationsPerMonth(c, s, tc.shards), 3600*s.gwMonth; got != want {
			t.Errorf("without a batch size: invocations = %g; want the run's scaled, %g", got, want)
		}
	}
}

// The events stream is a stream of its own: its shards are sized from its
// own rates and paid beside the telemetry stream's, its PUT units grow
// with bowls, its consumer's GB-seconds join the compute line and its
// concurrency the account's.
func TestEventsStreamPaidApart(t *testing.T) {
	without, err := Run(fixed(), Model{EventsParallelizationFactor: 10})
	if err != nil {
		t.Fatal(err)
	}
	c := fixed()
	// 1,500 bowls x 8 events a day for an hour: 500 records of 1 KB.
	c.Events = StreamCounts{Records: 500, Bytes: 500 * 700, BilledBytes: 500 * 1024, PutUnits: 500, BytesRead: 500 * 700,
		Invocations: 500, GBSeconds: 5, BatchSize: 100}
	e, err := Run(c, Model{EventsParallelizationFactor: 10})
	if err != nil {
		t.Fatal(err)
	}
	i := len(e.Scales) - 1 // 10M bowls: 500 x 6,667 / 3600 s x 2 = 1,852 records/s at peak
	if got, want := e.EventsShards[i], 4; got != want {
		t.Errorf("events shards at 10M = %d; want %d (1,852 records/s at peak, shards at half)", got, want)
	}
	if e.EventsShards[0] != 1 || without.EventsShards[0] != 0 {
		t.Errorf("events shards at 10k = %d, without events %d; want 1, 0", e.EventsShards[0], without.EventsShards[0])
	}
	s := newScale(c, Model{BowlsPerGateway: 1.5}, e.Scales[i])
	wantKinesis := PriceOf(KinesisShardHour).Cost(4*730) + PriceOf(KinesisExtendedShard).Cost(4*730) + PriceOf(KinesisPutUnits).Cost(500*s.bowlMonth)
	// Put units are tiered by none: the difference is the events stream's.
	if got := line(t, e, CompKinesis, true).Monthly[i] - line(t, without, CompKinesis, true).Monthly[i]; !near(got, wantKinesis) {
		t.Errorf("kinesis at 10M, events stream's share = %g; want %g", got, wantKinesis)
	}
	if got, want := line(t, e, CompCompute, true).Monthly[i]-line(t, without, CompCompute, true).Monthly[i],
		PriceOf(LambdaDurationARM).Cost((10+5)*s.bowlMonth)-PriceOf(LambdaDurationARM).Cost(10*s.bowlMonth)+PriceOf(LambdaRequests).Cost(batchesPerMonth(500*s.bowlRate/4, 100, 0, 4)); !near(got, want) {
		t.Errorf("compute at 10M, events consumer's share = %g; want %g", got, want)
	}
	var conc, par QuotaLine
	for _, q := range e.Quotas {
		switch {
		case q.ID == QLambdaConcurrency:
			conc = q
		case q.ID == QLambdaParallel && q.Of == "events":
			par = q
		}
	}
	if got, want := conc.Load[i], float64(e.Shards[i]*1+4*10); got != want {
		t.Errorf("lambda concurrency at 10M = %g; want %g (telemetry shards x 1 + events shards x 10)", got, want)
	}
	if par.Load == nil || par.Load[i] != 10 {
		t.Errorf("events parallelization line = %+v; want a load of 10", par)
	}
}
