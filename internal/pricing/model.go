package pricing

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// SecondsPerMonth is the month AWS prices by: 730 hours.
const SecondsPerMonth = 730 * 3600

// gigabyte is the GB of Kinesis's per-GB prices.
const gigabyte = 1 << 30

// Kinesis capacity modes.
const (
	Provisioned = "provisioned"
	OnDemand    = "on-demand"
)

// Model says how to scale counts. The zero value of each field means its
// documented default.
type Model struct {
	// Scales are the fleet sizes in bowls. Default 10k, 100k, 1M, 10M.
	Scales []int
	// BowlsPerGateway turns bowls into gateways at scale. Default 1.5.
	BowlsPerGateway float64
	// Kinesis is the capacity mode the total uses, Provisioned (default)
	// or OnDemand; the other is printed beside it.
	Kinesis string
	// RetentionHours of the telemetry stream. Default 168 (7 days, the
	// template's).
	RetentionHours float64
	// PeakFactor multiplies mean rates for the quota loads. Default 2.
	PeakFactor float64
	// ShardTarget is the share of a shard's write capacity the sized
	// shard count may use at peak. Default 0.5.
	ShardTarget float64
	// ParallelizationFactor of the consumer's Kinesis event source.
	// Default 1.
	ParallelizationFactor int
	// EventsRetentionHours of the events stream. Default RetentionHours.
	EventsRetentionHours float64
	// EventsParallelizationFactor of the events consumer's Kinesis event
	// source. Default 1.
	EventsParallelizationFactor int
	// GoalUSD is the goal for the whole path in $ per bowl per month at
	// GoalBowls. Defaults 0.02 and 1,000,000.
	GoalUSD   float64
	GoalBowls int
}

// setDefaults fills the zero fields with their defaults.
func (m *Model) setDefaults() {
	if len(m.Scales) == 0 {
		m.Scales = []int{10_000, 100_000, 1_000_000, 10_000_000}
	}
	if m.BowlsPerGateway == 0 {
		m.BowlsPerGateway = 1.5
	}
	if m.Kinesis == "" {
		m.Kinesis = Provisioned
	}
	if m.RetentionHours == 0 {
		m.RetentionHours = 168
	}
	if m.PeakFactor == 0 {
		m.PeakFactor = 2
	}
	if m.ShardTarget == 0 {
		m.ShardTarget = 0.5
	}
	if m.ParallelizationFactor == 0 {
		m.ParallelizationFactor = 1
	}
	if m.EventsRetentionHours == 0 {
		m.EventsRetentionHours = m.RetentionHours
	}
	if m.EventsParallelizationFactor == 0 {
		m.EventsParallelizationFactor = 1
	}
	if m.GoalUSD == 0 {
		m.GoalUSD = 0.02
	}
	if m.GoalBowls == 0 {
		m.GoalBowls = 1_000_000
	}
}

// Validate checks the model; it does not change it. A zero field stands
// for its default.
func (m Model) Validate() error {
	m.setDefaults()
	for _, n := range m.Scales {
		if n < 1 {
			return fmt.Errorf("pricing: scale %d bowls: want > 0", n)
		}
	}
	if m.Kinesis != Provisioned && m.Kinesis != OnDemand {
		return fmt.Errorf("pricing: kinesis mode %q: want %s or %s", m.Kinesis, Provisioned, OnDemand)
	}
	if m.BowlsPerGateway < 0 || m.PeakFactor < 1 || m.ShardTarget <= 0 || m.ShardTarget > 1 || m.RetentionHours < 24 || m.ParallelizationFactor < 1 || m.ParallelizationFactor > 10 ||
		m.EventsRetentionHours < 24 || m.EventsParallelizationFactor < 1 || m.EventsParallelizationFactor > 10 {
		return fmt.Errorf("pricing: model %+v: want bowls per gateway > 0, peak >= 1, 0 < shard target <= 1, retention >= 24 h, parallelization 1..10", m)
	}
	return nil
}

// Components of the bill, in print order.
const (
	CompConnectivity = "connectivity"
	CompMessaging    = "messaging"
	CompRules        = "rules"
	CompAcks         = "acknowledgements"
	CompKinesis      = "kinesis"
	CompDynamoDB     = "dynamodb"
	CompPipes        = "pipes"
	CompSQS          = "sqs"
	CompCompute      = "compute"
)

// Line is one component's cost at each scale.
type Line struct {
	Component string `json:"component"`
	// Variant tells apart lines of one component (the Kinesis modes).
	Variant string `json:"variant,omitempty"`
	// Detail says what the line is made of ("provisioned, 7-day retention").
	Detail string `json:"detail,omitempty"`
	Stage  Stage  `json:"stage"`
	// Measured is false when the stage was not measured: the line is zero
	// (or partial) for want of counts, not because it is free.
	Measured bool `json:"measured"`
	// InTotal is false for an alternative shown beside the total (the
	// other Kinesis mode).
	InTotal bool `json:"in_total"`
	// PerBowl is USD per bowl per month at each scale; Monthly the USD per
	// month for the whole fleet.
	PerBowl []float64 `json:"usd_per_bowl_month"`
	Monthly []float64 `json:"usd_month"`
	// Unverified lists the price ids the line uses that are not verified.
	Unverified []string `json:"unverified_prices,omitempty"`
}

// QuotaLine is one quota's load at each scale.
type QuotaLine struct {
	Quota
	// Of names the part of the path the load is of when a quota has
	// lines for several ("events": the events stream and its consumer).
	Of       string    `json:"of,omitempty"`
	Stage    Stage     `json:"stage"`
	Measured bool      `json:"measured"`
	Load     []float64 `json:"load"`
	// Percent of the default at each scale; nil when the default is
	// unknown.
	Percent []float64 `json:"percent,omitempty"`
	// Flags at each scale: "" or "> 50 %", "needs raise", "NOT RAISABLE".
	Flags []string `json:"flags"`
}

// Goal is one of the goals and whether the estimate meets it.
type Goal struct {
	Name   string `json:"name"`
	Met    bool   `json:"met"`
	Detail string `json:"detail"`
}

// Estimate is the bill and the quota loads at each scale.
type Estimate struct {
	Scales          []int   `json:"scales"`
	BowlsPerGateway float64 `json:"bowls_per_gateway"`
	Kinesis         string  `json:"kinesis_mode"`
	Shards          []int   `json:"provisioned_shards"`
	// EventsShards is the events stream's provisioned shards (0 when the
	// run drove no events).
	EventsShards []int            `json:"provisioned_events_shards"`
	Lines        []Line           `json:"lines"`
	Total        []float64        `json:"total_usd_per_bowl_month"`
	Quotas       []QuotaLine      `json:"quotas"`
	Goals        []Goal           `json:"goals"`
	NotMeasured  map[Stage]string `json:"not_measured,omitempty"`
}

// scale holds the multipliers of one fleet size.
type scale struct {
	bowls, gateways float64
	// gwMonth and bowlMonth turn a run count into a monthly count, for
	// counts that grow with gateways and with bowls; gwRate and bowlRate
	// into a rate per second.
	gwMonth, bowlMonth, gwRate, bowlRate float64
	// eventShards is the events stream's provisioned shards.
	eventShards int
}

func newScale(c Counts, m Model, bowls int) scale {
	d := c.Duration.Seconds()
	s := scale{bowls: float64(bowls), gateways: float64(bowls) / m.BowlsPerGateway}
	s.gwRate = s.gateways / float64(c.Gateways) / d
	s.bowlRate = s.bowls / float64(c.Bowls) / d
	s.gwMonth = s.gwRate * SecondsPerMonth
	s.bowlMonth = s.bowlRate * SecondsPerMonth
	return s
}

// shards is the provisioned shard count for the peak write rates.
func (s scale) shards(c Counts, m Model) int {
	bytes := float64(c.KinesisBytes) * s.bowlRate * m.PeakFactor
	records := float64(c.KinesisRecords) * s.gwRate * m.PeakFactor
	need := math.Max(bytes/(1<<20), records/1000) / m.ShardTarget
	return max(1, int(math.Ceil(need)))
}

// eventsShards is the events stream's provisioned shard count for its
// peak write rates, 0 when there are no events.
func (s scale) eventsShards(c Counts, m Model) int {
	if c.Events.Records == 0 {
		return 0
	}
	bytes := float64(c.Events.Bytes) * s.bowlRate * m.PeakFactor
	records := float64(c.Events.Records) * s.bowlRate * m.PeakFactor
	need := math.Max(bytes/(1<<20), records/1000) / m.ShardTarget
	return max(1, int(math.Ceil(need)))
}

// Run estimates the bill and quota loads of counts c under model m.
func Run(c Counts, m Model) (Estimate, error) {
	m.setDefaults()
	if err := m.Validate(); err != nil {
		return Estimate{}, err
	}
	if err := c.Validate(); err != nil {
		return Estimate{}, err
	}
	e := Estimate{Scales: m.Scales, BowlsPerGateway: m.BowlsPerGateway, Kinesis: m.Kinesis, NotMeasured: c.NotMeasured}
	scales := make([]scale, len(m.Scales))
	for i, n := range m.Scales {
		scales[i] = newScale(c, m, n)
		e.Shards = append(e.Shards, scales[i].shards(c, m))
		scales[i].eventShards = scales[i].eventsShards(c, m)
		e.EventsShards = append(e.EventsShards, scales[i].eventShards)
	}
	e.Lines = lines(c, m, scales, e.Shards)
	e.Total = make([]float64, len(m.Scales))
	for _, l := range e.Lines {
		if l.InTotal {
			for i, v := range l.PerBowl {
				e.Total[i] += v
			}
		}
	}
	e.Quotas = quotaLines(c, m, scales, e.Shards)
	e.Goals = goals(c, m, e)
	return e, nil
}

// cost is a component's monthly USD at one scale, with the prices used.
type cost struct {
	usd    float64
	prices []string
}

func (k *cost) add(id string, quantity float64) {
	k.usd += PriceOf(id).Cost(quantity)
	k.prices = append(k.prices, id)
}

// addShare adds the share (of total) of the tiered cost of total.
func (k *cost) addShare(id string, share, total float64) {
	if total > 0 {
		k.usd += PriceOf(id).Cost(total) * share / total
	}
	k.prices = append(k.prices, id)
}

type component struct {
	name, variant, detail string
	stage                 Stage
	inTotal               bool
	cost                  func(s scale, shards int) cost
}

func lines(c Counts, m Model, scales []scale, shards []int) []Line {
	sum := func(t map[string]float64) float64 {
		var v float64
		for _, u := range t {
			v += u
		}
		return v
	}
	extendedHours := math.Min(m.RetentionHours-24, 144)
	eventsExtended := math.Min(m.EventsRetentionHours-24, 144)
	provisioned := component{name: CompKinesis, variant: Provisioned, detail: fmt.Sprintf("shard-hours, extended retention (telemetry %.0f h, events %.0f h) per shard-hour, 25 KB PUT units, both streams", m.RetentionHours, m.EventsRetentionHours), stage: StageRules, cost: func(s scale, shards int) (k cost) {
		k.add(KinesisShardHour, float64(shards+s.eventShards)*730)
		if extendedHours > 0 {
			k.add(KinesisExtendedShard, float64(shards)*730)
		}
		if eventsExtended > 0 && s.eventShards > 0 {
			k.add(KinesisExtendedShard, float64(s.eventShards)*730)
		}
		k.add(KinesisPutUnits, float64(c.KinesisPutUnits)*s.gwMonth+float64(c.Events.PutUnits)*s.bowlMonth)
		return k
	}}
	onDemand := component{name: CompKinesis, variant: OnDemand, detail: fmt.Sprintf("stream-hours, GB in (1 KB records), GB out, extended retention (telemetry %.0f h, events %.0f h) per GB-month, both streams", m.RetentionHours, m.EventsRetentionHours), stage: StageRules, cost: func(s scale, _ int) (k cost) {
		in := float64(c.KinesisBilledBytes) * s.bowlMonth / gigabyte
		k.add(KinesisStreamHour, 730)
		k.add(KinesisIngestGB, in)
		k.add(KinesisRetrieveGB, float64(c.KinesisBytesRead)*s.bowlMonth/gigabyte)
		if extendedHours > 0 {
			// A month's data in, held past its first day for extendedHours.
			k.add(KinesisExtendedGB, in*extendedHours/730)
		}
		if c.Events.Records > 0 {
			ein := float64(c.Events.BilledBytes) * s.bowlMonth / gigabyte
			k.add(KinesisStreamHour, 730)
			k.add(KinesisIngestGB, ein)
			k.add(KinesisRetrieveGB, float64(c.Events.BytesRead)*s.bowlMonth/gigabyte)
			if eventsExtended > 0 {
				k.add(KinesisExtendedGB, ein*eventsExtended/730)
			}
		}
		return k
	}}
	provisioned.inTotal = m.Kinesis == Provisioned
	onDemand.inTotal = m.Kinesis == OnDemand
	comps := []component{
		{name: CompConnectivity, stage: StageBroker, inTotal: true, cost: func(s scale, _ int) (k cost) {
			k.add(IoTConnectivity, c.ConnectionSeconds/60*s.gwMonth)
			return k
		}},
		{name: CompMessaging, detail: "publishes, CONNECT, SUBSCRIBE, PUBACKs received; Basic Ingest free", stage: StageBroker, inTotal: true, cost: func(s scale, _ int) (k cost) {
			k.addShare(IoTMessaging, float64(c.Messaging.Units)*s.gwMonth, float64(c.Messaging.Units+c.AckMessaging.Units)*s.gwMonth)
			return k
		}},
		{name: CompRules, detail: "rules triggered and actions executed, each in 5 KB units", stage: StageRules, inTotal: true, cost: func(s scale, _ int) (k cost) {
			k.add(IoTRulesTriggered, float64(c.RuleUnits)*s.gwMonth)
			k.add(IoTRulesActions, float64(c.RuleActionUnits)*s.gwMonth)
			return k
		}},
		{name: CompAcks, detail: "HTTPS publish, delivery, PUBACK at QoS 1", stage: StageAcks, inTotal: true, cost: func(s scale, _ int) (k cost) {
			k.addShare(IoTMessaging, float64(c.AckMessaging.Units)*s.gwMonth, float64(c.Messaging.Units+c.AckMessaging.Units)*s.gwMonth)
			return k
		}},
		provisioned,
		onDemand,
		{name: CompDynamoDB, detail: "on-demand request units, every table", stage: StageConsumer, inTotal: true, cost: func(s scale, _ int) (k cost) {
			k.add(DynamoDBWrite, sum(c.WRU)*s.bowlMonth)
			k.add(DynamoDBRead, sum(c.RRU)*s.bowlMonth)
			k.add(DynamoDBStreamsRead, float64(c.StreamsGetRecords)*s.bowlMonth)
			return k
		}},
		{name: CompPipes, stage: StageEvents, inTotal: true, cost: func(s scale, _ int) (k cost) {
			k.add(PipesRequests, float64(c.PipesRequests)*s.bowlMonth)
			return k
		}},
		{name: CompSQS, stage: StageEvents, inTotal: true, cost: func(s scale, _ int) (k cost) {
			k.add(SQSStandard, float64(c.SQSRequests)*s.bowlMonth)
			k.add(SQSFIFO, float64(c.SQSFIFORequests)*s.bowlMonth)
			return k
		}},
		{name: CompCompute, detail: "Lambda arm64: invocations and measured GB-seconds, telemetry and events consumers", stage: StageConsumer, inTotal: true, cost: func(s scale, n int) (k cost) {
			k.add(LambdaRequests, invocationsPerMonth(c, s, n)+eventsInvocationsPerMonth(c, s))
			k.add(LambdaDurationARM, (c.LambdaGBSeconds+c.Events.GBSeconds)*s.bowlMonth)
			return k
		}},
	}
	var out []Line
	for _, comp := range comps {
		l := Line{Component: comp.name, Variant: comp.variant, Detail: comp.detail, Stage: comp.stage, Measured: c.Measured(comp.stage), InTotal: comp.inTotal}
		for i, s := range scales {
			k := comp.cost(s, shards[i])
			l.Monthly = append(l.Monthly, k.usd)
			l.PerBowl = append(l.PerBowl, k.usd/s.bowls)
			if i == 0 {
				for _, id := range k.prices {
					if !PriceOf(id).Verified() && !slices.Contains(l.Unverified, id) {
						l.Unverified = append(l.Unverified, id)
					}
				}
			}
		}
		out = append(out, l)
	}
	return out
}

// invocationsPerMonth is the consumer's Lambda invocations per month at
// scale s with n shards. Without the mapping's batch size in c they grow
// with gateways like the run's. With it, each shard gets its share r of
// the records per second and the mapping hands them over in batches of at
// most BatchSize, at most one partial batch per batching window (or per
// read, about one a second): max(r / BatchSize, min(r, 1 / window)) invocations per shard-second.
// The run's own invocations are counted (LambdaInvocations) and shown;
// at a few records per shard they are about one per record, which a
// fleet's full batches are not.
func invocationsPerMonth(c Counts, s scale, n int) float64 {
	if c.LambdaBatchSize <= 0 || n < 1 {
		return float64(c.LambdaInvocations) * s.gwMonth
	}
	return batchesPerMonth(float64(c.KinesisRecords)*s.gwRate/float64(n), c.LambdaBatchSize, c.LambdaBatchWindow, n)
}

// eventsInvocationsPerMonth is invocationsPerMonth for the events
// consumer, on the events stream's shards; the run's own when the
// mapping's batch size is not in c.
func eventsInvocationsPerMonth(c Counts, s scale) float64 {
	e := c.Events
	if e.BatchSize <= 0 || s.eventShards < 1 {
		return float64(e.Invocations) * s.bowlMonth
	}
	return batchesPerMonth(float64(e.Records)*s.bowlRate/float64(s.eventShards), e.BatchSize, e.BatchWindow, s.eventShards)
}

// batchesPerMonth is a mapping's invocations per month on n shards of r
// records per second each.
func batchesPerMonth(r float64, batchSize int, window time.Duration, n int) float64 {
	perShard := r / float64(batchSize)
	// Lambda reads a shard about once a second: a window under a second
	// still hands over at most one partial batch per read.
	w := math.Max(window.Seconds(), 1)
	perShard = math.Max(perShard, math.Min(r, 1/w))
	return perShard * float64(n) * SecondsPerMonth
}

// load is a quota's load at one scale.
type load struct {
	id string
	// of, when set, names the part of the path the line is about (the
	// events stream's lines beside the telemetry stream's).
	of    string
	stage Stage
	at    func(s scale, shards int) float64
}

// perShard is a rate spread over n shards, 0 without shards.
func perShard(rate float64, n int) float64 {
	if n < 1 {
		return 0
	}
	return rate / float64(n)
}

func quotaLines(c Counts, m Model, scales []scale, shards []int) []QuotaLine {
	d := c.Duration.Seconds()
	peak := m.PeakFactor
	maxOf := func(t map[string]float64) float64 {
		var v float64
		for _, u := range t {
			v = math.Max(v, u)
		}
		return v
	}
	var sumW float64
	for _, u := range c.WRU {
		sumW += u
	}
	loads := []load{
		{QIoTConnPublishRate, "", StageBroker, func(scale, int) float64 { return float64(c.MaxConnPublishes) / d * peak }},
		{QIoTConnThroughput, "", StageBroker, func(scale, int) float64 { return float64(c.MaxConnBytes) / d * peak }},
		{QIoTConnSubs, "", StageBroker, func(scale, int) float64 { return float64(c.MaxConnSubscriptions) }},
		{QIoTInboundPublish, "", StageBroker, func(s scale, _ int) float64 { return float64(c.PublishesIn+c.HTTPPublishes) * s.gwRate * peak }},
		{QIoTOutboundPublish, "", StageBroker, func(s scale, _ int) float64 { return float64(c.PublishesOut) * s.gwRate * peak }},
		{QIoTConnectRate, "", StageBroker, func(s scale, _ int) float64 { return float64(c.Reconnects) * s.gwRate * peak }},
		{QIoTConnections, "", StageBroker, func(s scale, _ int) float64 {
			return float64(c.MaxConnections) * s.gateways / float64(c.Gateways)
		}},
		{QIoTRuleEvaluations, "", StageRules, func(s scale, _ int) float64 { return float64(c.RuleEvaluations) * s.gwRate * peak }},
		{QIoTBasicIngest, "", StageBroker, func(s scale, _ int) float64 { return float64(c.BasicIngest.Messages) * s.gwRate * peak }},
		{QIoTHTTPPublish, "", StageAcks, func(s scale, _ int) float64 { return float64(c.HTTPPublishes) * s.gwRate * peak }},
		{QIoTMessageSize, "", StageBroker, func(scale, int) float64 { return float64(c.MaxMessageBytes) }},
		{QKinesisShardWrite, "", StageRules, func(s scale, n int) float64 { return float64(c.KinesisBytes) * s.bowlRate * peak / float64(n) }},
		{QKinesisShardRecords, "", StageRules, func(s scale, n int) float64 { return float64(c.KinesisRecords) * s.gwRate * peak / float64(n) }},
		{QKinesisShardRead, "", StageConsumer, func(s scale, n int) float64 { return float64(c.KinesisBytesRead) * s.bowlRate * peak / float64(n) }},
		{QKinesisShardGets, "", StageConsumer, func(scale, int) float64 {
			if c.RunShards == 0 {
				return 0
			}
			return float64(c.KinesisGetRecords) / d / float64(c.RunShards)
		}},
		{QKinesisOnDemand, "", StageRules, func(s scale, _ int) float64 {
			if m.Kinesis != OnDemand {
				return 0
			}
			return float64(c.KinesisBytes) * s.bowlRate * peak
		}},
		{QKinesisShardWrite, "events", StageEvents, func(s scale, _ int) float64 { return perShard(float64(c.Events.Bytes)*s.bowlRate*peak, s.eventShards) }},
		{QKinesisShardRecords, "events", StageEvents, func(s scale, _ int) float64 {
			return perShard(float64(c.Events.Records)*s.bowlRate*peak, s.eventShards)
		}},
		{QKinesisShardRead, "events", StageEvents, func(s scale, _ int) float64 {
			return perShard(float64(c.Events.BytesRead)*s.bowlRate*peak, s.eventShards)
		}},
		{QKinesisShards, "both streams", StageRules, func(s scale, n int) float64 {
			if m.Kinesis != Provisioned {
				return 0
			}
			return float64(n + s.eventShards)
		}},
		{QLambdaConcurrency, "both consumers", StageConsumer, func(s scale, n int) float64 {
			return float64(n*m.ParallelizationFactor + s.eventShards*m.EventsParallelizationFactor)
		}},
		{QLambdaParallel, "", StageConsumer, func(scale, int) float64 { return float64(m.ParallelizationFactor) }},
		{QLambdaParallel, "events", StageEvents, func(scale, int) float64 { return float64(m.EventsParallelizationFactor) }},
		{QDynamoPartitionW, "", StageConsumer, func(scale, int) float64 { return c.MaxKeyWRU / d * peak }},
		{QDynamoPartitionR, "", StageConsumer, func(scale, int) float64 { return c.MaxKeyRRU / d * peak }},
		{QDynamoTableW, "", StageConsumer, func(s scale, _ int) float64 { return maxOf(c.WRU) * s.bowlRate * peak }},
		{QDynamoTableR, "", StageConsumer, func(s scale, _ int) float64 { return maxOf(c.RRU) * s.bowlRate * peak }},
		{QDynamoAccount, "", StageConsumer, func(s scale, _ int) float64 { return sumW * s.bowlRate * peak }},
		// The whole queue's messages as if in one partition: an upper
		// bound, SQS adds partitions as the message groups' load grows.
		{QSQSFIFOThroughput, "", StageEvents, func(s scale, _ int) float64 { return float64(c.SQSFIFOMessages) * s.bowlRate * peak }},
		{QSQSFIFOInFlight, "", StageQueues, func(scale, int) float64 { return 0 }},
		{QSQSStandardInFlight, "", StageQueues, func(scale, int) float64 { return 0 }},
		{QPipes, "", StageQueues, func(scale, int) float64 { return float64(c.Pipes) }},
	}
	hundredK := slices.Index(m.Scales, 100_000)
	tenM := slices.Index(m.Scales, 10_000_000)
	var out []QuotaLine
	for _, l := range loads {
		q := QuotaOf(l.id)
		ql := QuotaLine{Quota: q, Of: l.of, Stage: l.stage, Measured: c.Measured(l.stage)}
		for i, s := range scales {
			v := l.at(s, shards[i])
			ql.Load = append(ql.Load, v)
			flag := ""
			if q.Default > 0 {
				pct := 100 * v / q.Default
				ql.Percent = append(ql.Percent, pct)
				switch {
				case pct > 100 && !q.Adjustable:
					flag = "NOT RAISABLE"
				case pct > 100 && i == tenM:
					flag = "needs raise"
				case pct > 100:
					flag = "over default"
				case pct > 50 && i == hundredK:
					flag = "> 50 %"
				}
			}
			ql.Flags = append(ql.Flags, flag)
		}
		out = append(out, ql)
	}
	return out
}

func goals(c Counts, m Model, e Estimate) []Goal {
	var gs []Goal
	if i := slices.Index(m.Scales, m.GoalBowls); i >= 0 {
		missing := ""
		if len(c.NotMeasured) > 0 {
			missing = fmt.Sprintf("; %d stage(s) not measured", len(c.NotMeasured))
		}
		gs = append(gs, Goal{
			Name:   fmt.Sprintf("at most $%.3f per bowl per month at %d bowls", m.GoalUSD, m.GoalBowls),
			Met:    e.Total[i] <= m.GoalUSD && len(c.NotMeasured) == 0,
			Detail: fmt.Sprintf("$%.5f%s", e.Total[i], missing),
		})
	}
	if i := slices.Index(m.Scales, 100_000); i >= 0 {
		var over []string
		for _, q := range e.Quotas {
			if q.Percent != nil && q.Percent[i] > 50 {
				over = append(over, fmt.Sprintf("%s %.0f %%", q.ID, q.Percent[i]))
			}
		}
		gs = append(gs, Goal{Name: "no quota above 50 % of its default at 100,000 bowls", Met: len(over) == 0, Detail: joinOr(over, "none above")})
	}
	if i := slices.Index(m.Scales, 10_000_000); i >= 0 {
		var hard, raise []string
		for _, q := range e.Quotas {
			if q.Percent == nil || q.Percent[i] <= 100 {
				continue
			}
			if q.Adjustable {
				raise = append(raise, q.ID)
			} else {
				hard = append(hard, fmt.Sprintf("%s %.0f %%", q.ID, q.Percent[i]))
			}
		}
		gs = append(gs, Goal{Name: "at 10M bowls no load beyond what AWS raises on request", Met: len(hard) == 0,
			Detail: fmt.Sprintf("not raisable: %s; raise on request: %s", joinOr(hard, "none"), joinOr(raise, "none"))})
	}
	return gs
}

func joinOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	out := s[0]
	for _, v := range s[1:] {
		out += ", " + v
	}
	return out
}
