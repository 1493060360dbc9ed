package pricing

import (
	"fmt"
	"math"
)

// Region is the region every price and quota is for.
const Region = "us-east-1"

// ReadOn is the date the tables were read from their sources.
const ReadOn = "2026-12-01"

// Tier is one step of a tiered price: USD per priced unit for the
// quantity up to UpTo base units in a month (0: no upper bound).
type Tier struct {
	UpTo float64 `json:"up_to,omitempty"`
	USD  float64 `json:"usd"`
}

// Price is one billed dimension.
type Price struct {
	ID string `json:"id"`
	// Service and Item say what is billed, as the source names it.
	Service string `json:"service"`
	Item    string `json:"item"`
	// Unit is what one base unit is ("message (5 KB)", "GB-second").
	Unit string `json:"unit"`
	// Per is how many base units one price applies to (1e6 for "per
	// million").
	Per float64 `json:"per"`
	// Tiers are the prices by monthly volume, in order; a flat price has
	// one tier.
	Tiers []Tier `json:"tiers"`
	// Source is the public page the price is read from, ReadOn the date.
	Source string `json:"source"`
	ReadOn string `json:"read_on"`
	// Status is "verified" when the number was seen on the source page,
	// else "unverified: <why>".
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
}

// Verified reports whether the price was confirmed on its source page.
func (p Price) Verified() bool { return p.Status == "verified" }

// Cost is what quantity base units cost in one month, with the tiers
// applied in order.
func (p Price) Cost(quantity float64) float64 {
	if quantity <= 0 {
		return 0
	}
	var usd, done float64
	for _, t := range p.Tiers {
		n := quantity - done
		if t.UpTo > 0 {
			n = math.Min(n, t.UpTo-done)
		}
		if n <= 0 {
			continue
		}
		usd += n / p.Per * t.USD
		done += n
		if done >= quantity {
			break
		}
	}
	return usd
}

// Source pages.
const (
	srcIoT         = "https://aws.amazon.com/iot-core/pricing/"
	srcIoTDetails  = "https://aws.amazon.com/iot-core/pricing/additional-details/"
	srcKinesis     = "https://aws.amazon.com/kinesis/data-streams/pricing/"
	srcDynamoDB    = "https://aws.amazon.com/dynamodb/pricing/on-demand/"
	srcSQS         = "https://aws.amazon.com/sqs/pricing/"
	srcEventBridge = "https://aws.amazon.com/eventbridge/pricing/"
	srcLambda      = "https://aws.amazon.com/lambda/pricing/"
)

// Price IDs, as Estimate uses them.
const (
	IoTConnectivity       = "iot.connectivity"
	IoTMessaging          = "iot.messaging"
	IoTRulesTriggered     = "iot.rules.triggered"
	IoTRulesActions       = "iot.rules.actions"
	KinesisShardHour      = "kinesis.provisioned.shard_hour"
	KinesisPutUnits       = "kinesis.provisioned.put_payload_units"
	KinesisExtendedShard  = "kinesis.provisioned.extended_retention"
	KinesisStreamHour     = "kinesis.on_demand.stream_hour"
	KinesisIngestGB       = "kinesis.on_demand.data_in"
	KinesisRetrieveGB     = "kinesis.on_demand.data_out"
	KinesisExtendedGB     = "kinesis.on_demand.extended_retention"
	DynamoDBWrite         = "dynamodb.on_demand.write"
	DynamoDBRead          = "dynamodb.on_demand.read"
	DynamoDBStreamsRead   = "dynamodb.streams.read"
	SQSStandard           = "sqs.standard"
	SQSFIFO               = "sqs.fifo"
	PipesRequests         = "pipes.requests"
	LambdaRequests        = "lambda.requests"
	LambdaDurationARM     = "lambda.duration.arm64"
	unverifiedTable       = "unverified: the page's us-east-1 table was not readable in the copies searched on 2026-12-01; the number is the long-standing us-east-1 list price, to be confirmed on the page"
	unverifiedThirdParty  = "unverified: AWS's page table is not rendered in the copy read; third-party pages of 2025-2026 give the same number"
	unverifiedFromExample = "unverified for us-east-1: the number is the source page's own worked example (Europe, Ireland), the region's row is a template in the copy read"
)

// Prices is the price table: one home for every price the estimate uses.
var Prices = []Price{
	{ID: IoTConnectivity, Service: "AWS IoT Core", Item: "connectivity", Unit: "connection-minute", Per: 1e6,
		Tiers: []Tier{{USD: 0.08}}, Source: srcIoT, ReadOn: ReadOn, Status: unverifiedFromExample,
		Note: "metered in one-minute increments of connected time; PINGREQ/PINGRESP free (additional details)"},
	{ID: IoTMessaging, Service: "AWS IoT Core", Item: "messaging (MQTT and HTTP)", Unit: "message (5 KB)", Per: 1e6,
		Tiers: []Tier{{UpTo: 1e9, USD: 1.00}, {UpTo: 5e9, USD: 0.80}, {USD: 0.70}}, Source: srcIoT, ReadOn: ReadOn,
		Status: "unverified: $1.00 for the first billion is the page's worked example (Ireland); the 0.80 and 0.70 tiers are not rendered in the copy read",
		Note:   "metered in 5 KB increments of payload + topic (" + srcIoTDetails + "): PUBLISH in and out, CONNECT, SUBSCRIBE, PUBACK received from a device (one 5 KB message on MQTT 3.1.1), HTTP request and response bodies; PUBACK sent by the service, CONNACK, SUBACK, PING, DISCONNECT are free; Basic Ingest ($aws/rules/...) has no messaging charge"},
	{ID: IoTRulesTriggered, Service: "AWS IoT Core", Item: "rules triggered", Unit: "rule (5 KB)", Per: 1e6,
		Tiers: []Tier{{USD: 0.15}}, Source: srcIoT, ReadOn: ReadOn, Status: unverifiedTable,
		Note: "a rule is metered per 5 KB of the message it processes"},
	{ID: IoTRulesActions, Service: "AWS IoT Core", Item: "actions executed", Unit: "action (5 KB)", Per: 1e6,
		Tiers: []Tier{{USD: 0.15}}, Source: srcIoT, ReadOn: ReadOn, Status: unverifiedTable,
		Note: "metered in 5 KB units of the message the action sends, as the rule stand-in (cloud/rules) counts them; the error action counts only when it runs"},

	{ID: KinesisShardHour, Service: "Kinesis Data Streams", Item: "provisioned shard hour", Unit: "shard-hour", Per: 1,
		Tiers: []Tier{{USD: 0.015}}, Source: srcKinesis, ReadOn: ReadOn, Status: unverifiedThirdParty,
		Note: "one shard: 1 MB/s or 1,000 records/s in, 2 MB/s out"},
	{ID: KinesisPutUnits, Service: "Kinesis Data Streams", Item: "PUT payload units", Unit: "PUT payload unit (25 KB)", Per: 1e6,
		Tiers: []Tier{{USD: 0.014}}, Source: srcKinesis, ReadOn: ReadOn, Status: unverifiedTable,
		Note: "each record counts as ceil(size / 25 KB) units (the 25 KB unit is on the page); GetRecords is not charged in provisioned mode"},
	{ID: KinesisExtendedShard, Service: "Kinesis Data Streams", Item: "provisioned extended retention (24 h to 7 days)", Unit: "shard-hour", Per: 1,
		Tiers: []Tier{{USD: 0.02}}, Source: srcKinesis, ReadOn: ReadOn, Status: unverifiedTable,
		Note: "charged for every shard-hour of a stream whose retention is above 24 h (the telemetry stream keeps 7 days)"},
	{ID: KinesisStreamHour, Service: "Kinesis Data Streams", Item: "on-demand stream hour", Unit: "stream-hour", Per: 1,
		Tiers: []Tier{{USD: 0.04}}, Source: srcKinesis, ReadOn: ReadOn, Status: unverifiedTable},
	{ID: KinesisIngestGB, Service: "Kinesis Data Streams", Item: "on-demand data in", Unit: "GB (records rounded up to 1 KB)", Per: 1,
		Tiers: []Tier{{USD: 0.08}}, Source: srcKinesis, ReadOn: ReadOn,
		Status: "unverified: the page's table is not rendered in the copy read; one third-party lesson gives $0.008, which disagrees (one digit off); $0.08 is the documented us-east-1 price",
		Note:   "each record rounded up to the nearest 1 KB (stated on the page)"},
	{ID: KinesisRetrieveGB, Service: "Kinesis Data Streams", Item: "on-demand data out", Unit: "GB", Per: 1,
		Tiers: []Tier{{USD: 0.04}}, Source: srcKinesis, ReadOn: ReadOn, Status: unverifiedTable},
	{ID: KinesisExtendedGB, Service: "Kinesis Data Streams", Item: "on-demand extended retention (24 h to 7 days)", Unit: "GB-month", Per: 1,
		Tiers: []Tier{{USD: 0.10}}, Source: srcKinesis, ReadOn: ReadOn, Status: unverifiedTable},

	{ID: DynamoDBWrite, Service: "DynamoDB", Item: "on-demand write request units", Unit: "WRU (1 KB write)", Per: 1e6,
		Tiers: []Tier{{USD: 0.625}}, Source: srcDynamoDB, ReadOn: ReadOn,
		Status: "unverified: after the November 2024 cut; third-party pages agree on $0.625, one 2026 page still quotes the old $1.25",
		Note:   "1 WRU writes up to 1 KB (item size rounded up to 1 KB); transactional writes take 2 per KB"},
	{ID: DynamoDBRead, Service: "DynamoDB", Item: "on-demand read request units", Unit: "RRU (4 KB strongly consistent read)", Per: 1e6,
		Tiers: []Tier{{USD: 0.125}}, Source: srcDynamoDB, ReadOn: ReadOn,
		Status: "unverified: after the November 2024 cut; third-party pages agree on $0.125, some still quote the old $0.25",
		Note:   "1 RRU reads up to 4 KB strongly consistent, half for eventually consistent, 2 for transactional"},
	{ID: DynamoDBStreamsRead, Service: "DynamoDB", Item: "Streams read request units", Unit: "GetRecords call", Per: 1e5,
		Tiers: []Tier{{USD: 0.02}}, Source: srcDynamoDB, ReadOn: ReadOn, Status: unverifiedTable,
		Note: "GetRecords by a Lambda trigger is free; the telemetry_state table has no stream"},

	{ID: SQSStandard, Service: "SQS", Item: "standard queue requests", Unit: "request (64 KB chunk)", Per: 1e6,
		Tiers: []Tier{{UpTo: 100e9, USD: 0.40}, {UpTo: 200e9, USD: 0.30}, {USD: 0.24}}, Source: srcSQS, ReadOn: ReadOn, Status: unverifiedTable,
		Note: "every 64 KB chunk of a request's payload is one request; a batch of up to 10 messages is one request"},
	{ID: SQSFIFO, Service: "SQS", Item: "FIFO queue requests", Unit: "request (64 KB chunk)", Per: 1e6,
		Tiers: []Tier{{UpTo: 100e9, USD: 0.50}, {UpTo: 200e9, USD: 0.40}, {USD: 0.35}}, Source: srcSQS, ReadOn: ReadOn, Status: unverifiedTable},
	{ID: PipesRequests, Service: "EventBridge Pipes", Item: "requests (after filtering)", Unit: "request (64 KB chunk)", Per: 1e6,
		Tiers: []Tier{{USD: 0.40}}, Source: srcEventBridge, ReadOn: ReadOn, Status: unverifiedThirdParty,
		Note: "every 64 KB chunk of an event is one request"},

	{ID: LambdaRequests, Service: "Lambda", Item: "requests", Unit: "invocation", Per: 1e6,
		Tiers: []Tier{{USD: 0.20}}, Source: srcLambda, ReadOn: ReadOn, Status: unverifiedThirdParty},
	{ID: LambdaDurationARM, Service: "Lambda", Item: "duration, arm64", Unit: "GB-second", Per: 1,
		Tiers:  []Tier{{UpTo: 7.5e9, USD: 0.0000133334}, {UpTo: 18.75e9, USD: 0.0000120001}, {USD: 0.0000106667}},
		Source: srcLambda, ReadOn: ReadOn, Status: unverifiedThirdParty,
		Note: "billed per 1 ms of configured memory x duration"},
}

// PriceOf returns the price with id; it panics on an id the table does
// not have, which is a programming error caught by the tests.
func PriceOf(id string) Price {
	for _, p := range Prices {
		if p.ID == id {
			return p
		}
	}
	panic(fmt.Sprintf("pricing: no price %q", id))
}
