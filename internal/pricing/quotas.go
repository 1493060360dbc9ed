package pricing

import "fmt"

// Quota is one AWS quota the design touches.
type Quota struct {
	ID      string `json:"id"`
	Service string `json:"service"`
	Name    string `json:"name"`
	// Default is the default value in Unit; 0 when no default was found
	// (then Status says so and no percentage is printed).
	Default float64 `json:"default"`
	Unit    string  `json:"unit"`
	// Adjustable is whether AWS raises the quota on request.
	Adjustable bool   `json:"adjustable"`
	Source     string `json:"source"`
	ReadOn     string `json:"read_on"`
	Status     string `json:"status"`
	Note       string `json:"note,omitempty"`
}

const (
	srcIoTQuotas     = "https://docs.aws.amazon.com/general/latest/gr/iot-core.html"
	srcKinesisQuotas = "https://docs.aws.amazon.com/streams/latest/dev/service-sizes-and-limits.html"
	srcLambdaQuotas  = "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"
	srcLambdaKinesis = "https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html"
	srcDynamoQuotas  = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"
	srcSQSQuotas     = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html"
	srcSQSFIFO       = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/high-throughput-fifo.html"
	srcPipesQuotas   = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"

	kinesisShard = "verified: 1 MB/s or 1,000 records/s in and 2 MB/s out per shard, as the Kinesis pricing page states them"
	archivedIoT  = "verified against an archived copy of the AWS IoT limits page (the current page may differ by region)"
)

// Quota IDs, as Estimate uses them.
const (
	QIoTConnPublishRate  = "iot.connection.publish_rate"
	QIoTConnThroughput   = "iot.connection.throughput"
	QIoTConnSubs         = "iot.connection.subscriptions"
	QIoTInboundPublish   = "iot.account.inbound_publish"
	QIoTOutboundPublish  = "iot.account.outbound_publish"
	QIoTConnectRate      = "iot.account.connect_rate"
	QIoTConnections      = "iot.account.connections"
	QIoTRuleEvaluations  = "iot.rules.evaluations"
	QIoTBasicIngest      = "iot.rules.basic_ingest"
	QIoTHTTPPublish      = "iot.data.publish_tps"
	QIoTMessageSize      = "iot.message_size"
	QKinesisShardWrite   = "kinesis.shard.write_bytes"
	QKinesisShardRecords = "kinesis.shard.write_records"
	QKinesisShardRead    = "kinesis.shard.read_bytes"
	QKinesisShardGets    = "kinesis.shard.get_records"
	QKinesisShards       = "kinesis.account.shards"
	QKinesisOnDemand     = "kinesis.on_demand.streams"
	QLambdaConcurrency   = "lambda.concurrency"
	QLambdaParallel      = "lambda.esm.parallelization"
	QDynamoPartitionW    = "dynamodb.partition.write"
	QDynamoPartitionR    = "dynamodb.partition.read"
	QDynamoTableW        = "dynamodb.table.on_demand_write"
	QDynamoTableR        = "dynamodb.table.on_demand_read"
	QDynamoAccount       = "dynamodb.account.throughput"
	QSQSFIFOThroughput   = "sqs.fifo.throughput"
	QSQSFIFOInFlight     = "sqs.fifo.in_flight"
	QSQSStandardInFlight = "sqs.standard.in_flight"
	QPipes               = "pipes.account"
)

// Quotas is the quota table.
var Quotas = []Quota{
	{ID: QIoTConnPublishRate, Service: "AWS IoT Core", Name: "publish requests per second per connection (in and out)", Default: 100, Unit: "publishes/s", Adjustable: false, Source: srcIoTQuotas, ReadOn: ReadOn, Status: archivedIoT},
	{ID: QIoTConnThroughput, Service: "AWS IoT Core", Name: "throughput per connection", Default: 512 * 1024, Unit: "bytes/s", Adjustable: false, Source: srcIoTQuotas, ReadOn: ReadOn, Status: archivedIoT},
	{ID: QIoTConnSubs, Service: "AWS IoT Core", Name: "subscriptions per connection", Default: 50, Unit: "subscriptions", Adjustable: false, Source: srcIoTQuotas, ReadOn: ReadOn,
		Status: archivedIoT, Note: "the archived page says not adjustable; a third-party summary lists it as soft; treated as not adjustable"},
	{ID: QIoTInboundPublish, Service: "AWS IoT Core", Name: "inbound publish requests per second per account", Default: 20000, Unit: "publishes/s", Adjustable: true, Source: srcIoTQuotas, ReadOn: ReadOn,
		Status: archivedIoT, Note: "20,000 in us-east-1; counts broker publishes and HTTPS publishes; Basic Ingest has its own quota"},
	{ID: QIoTOutboundPublish, Service: "AWS IoT Core", Name: "outbound publish requests per second per account", Default: 20000, Unit: "publishes/s", Adjustable: true, Source: srcIoTQuotas, ReadOn: ReadOn, Status: archivedIoT},
	{ID: QIoTConnectRate, Service: "AWS IoT Core", Name: "connect requests per second per account", Default: 500, Unit: "connects/s", Adjustable: true, Source: srcIoTQuotas, ReadOn: ReadOn, Status: archivedIoT,
		Note: "load is the steady reconnect rate of the run; a fleet-wide reconnect after an outage is far above it and is paced by the gateways' backoff"},
	{ID: QIoTConnections, Service: "AWS IoT Core", Name: "maximum concurrent client connections per account", Default: 500000, Unit: "connections", Adjustable: true, Source: srcIoTQuotas, ReadOn: ReadOn, Status: archivedIoT},
	{ID: QIoTRuleEvaluations, Service: "AWS IoT Core", Name: "rule evaluations (inbound publishes to rules) per second per account", Default: 20000, Unit: "evaluations/s", Adjustable: true, Source: srcIoTQuotas, ReadOn: ReadOn, Status: archivedIoT},
	{ID: QIoTBasicIngest, Service: "AWS IoT Core", Name: "Basic Ingest inbound publish requests per second per account", Default: 20000, Unit: "publishes/s", Adjustable: true, Source: srcIoTQuotas, ReadOn: ReadOn, Status: archivedIoT},
	{ID: QIoTHTTPPublish, Service: "AWS IoT Core", Name: "data plane Publish (HTTPS) requests per second per account", Default: 0, Unit: "requests/s", Adjustable: true, Source: srcIoTQuotas, ReadOn: ReadOn,
		Status: "unverified: no default found in the copies read; an HTTPS publish also counts against the inbound publish quota above"},
	{ID: QIoTMessageSize, Service: "AWS IoT Core", Name: "message size", Default: 128 * 1024, Unit: "bytes", Adjustable: false, Source: srcIoTQuotas, ReadOn: ReadOn, Status: archivedIoT},

	{ID: QKinesisShardWrite, Service: "Kinesis Data Streams", Name: "writes per shard, bytes", Default: 1 << 20, Unit: "bytes/s per shard", Adjustable: false, Source: srcKinesisQuotas, ReadOn: ReadOn, Status: kinesisShard,
		Note: "load is per shard at the shard count the estimate sizes (50 % headroom)"},
	{ID: QKinesisShardRecords, Service: "Kinesis Data Streams", Name: "writes per shard, records", Default: 1000, Unit: "records/s per shard", Adjustable: false, Source: srcKinesisQuotas, ReadOn: ReadOn, Status: kinesisShard},
	{ID: QKinesisShardRead, Service: "Kinesis Data Streams", Name: "reads per shard, bytes (shared by all consumers without enhanced fan-out)", Default: 2 << 20, Unit: "bytes/s per shard", Adjustable: false, Source: srcKinesisQuotas, ReadOn: ReadOn, Status: kinesisShard},
	{ID: QKinesisShardGets, Service: "Kinesis Data Streams", Name: "GetRecords calls per shard", Default: 5, Unit: "calls/s per shard", Adjustable: false, Source: srcKinesisQuotas, ReadOn: ReadOn, Status: "unverified: the documented 5 calls/s per shard, not re-read",
		Note: "a Lambda event source polls each shard about once a second"},
	{ID: QKinesisShards, Service: "Kinesis Data Streams", Name: "shards per account per region (provisioned)", Default: 500, Unit: "shards", Adjustable: true, Source: srcKinesisQuotas, ReadOn: ReadOn,
		Status: "unverified: 500 in us-east-1, us-west-2 and eu-west-1 (200 elsewhere) is the documented default; not re-read on 2026-12-01"},
	{ID: QKinesisOnDemand, Service: "Kinesis Data Streams", Name: "on-demand stream write capacity (default maximum per stream)", Default: 200 << 20, Unit: "bytes/s", Adjustable: true, Source: srcKinesisQuotas, ReadOn: ReadOn,
		Status: "unverified: an on-demand stream starts at 4 MB/s and grows to twice its 30-day peak, up to 200 MB/s by default; 50 on-demand streams per account; not re-read"},

	{ID: QLambdaConcurrency, Service: "Lambda", Name: "concurrent executions per account per region", Default: 1000, Unit: "executions", Adjustable: true, Source: srcLambdaQuotas, ReadOn: ReadOn, Status: "unverified: 1,000 is the documented default; not re-read"},
	{ID: QLambdaParallel, Service: "Lambda", Name: "Kinesis event source ParallelizationFactor (concurrent batches per shard)", Default: 10, Unit: "batches per shard", Adjustable: false, Source: srcLambdaKinesis, ReadOn: ReadOn,
		Status: "unverified: maximum 10; the event source's concurrency is shards x ParallelizationFactor"},

	{ID: QDynamoPartitionW, Service: "DynamoDB", Name: "write throughput per partition", Default: 1000, Unit: "WRU/s", Adjustable: false, Source: srcDynamoQuotas, ReadOn: ReadOn, Status: "unverified: documented partition limit, not re-read",
		Note: "load is the busiest partition key of the run"},
	{ID: QDynamoPartitionR, Service: "DynamoDB", Name: "read throughput per partition", Default: 3000, Unit: "RRU/s", Adjustable: false, Source: srcDynamoQuotas, ReadOn: ReadOn, Status: "unverified: documented partition limit, not re-read"},
	{ID: QDynamoTableW, Service: "DynamoDB", Name: "on-demand table write throughput (default table maximum)", Default: 40000, Unit: "WRU/s", Adjustable: true, Source: srcDynamoQuotas, ReadOn: ReadOn, Status: "unverified: 40,000 per table is the documented default, not re-read"},
	{ID: QDynamoTableR, Service: "DynamoDB", Name: "on-demand table read throughput (default table maximum)", Default: 40000, Unit: "RRU/s", Adjustable: true, Source: srcDynamoQuotas, ReadOn: ReadOn, Status: "unverified: 40,000 per table is the documented default, not re-read"},
	{ID: QDynamoAccount, Service: "DynamoDB", Name: "account throughput (sum of tables, us-east-1)", Default: 80000, Unit: "WRU/s", Adjustable: true, Source: srcDynamoQuotas, ReadOn: ReadOn,
		Status: "unverified: 80,000 read and 80,000 write per account in us-east-1 is the documented default for provisioned tables; not re-read whether it bounds on-demand tables"},

	{ID: QSQSFIFOThroughput, Service: "SQS", Name: "FIFO throughput, high-throughput mode, per partition (message group spread)", Default: 3000, Unit: "messages/s with batching", Adjustable: false, Source: srcSQSFIFO, ReadOn: ReadOn,
		Status: "unverified: 300 API calls/s (3,000 messages/s batched) per partition; not re-read", Note: "events.fifo (the events path); rule-errors is a standard queue"},
	{ID: QSQSFIFOInFlight, Service: "SQS", Name: "FIFO messages in flight per queue", Default: 120000, Unit: "messages", Adjustable: false, Source: srcSQSQuotas, ReadOn: ReadOn,
		Status: "unverified: 120,000 (the older 20,000 no longer applies); not re-read"},
	{ID: QSQSStandardInFlight, Service: "SQS", Name: "standard queue messages in flight", Default: 120000, Unit: "messages", Adjustable: true, Source: srcSQSQuotas, ReadOn: ReadOn,
		Status: "unverified: 120,000; throughput of a standard queue is nearly unlimited"},
	{ID: QPipes, Service: "EventBridge Pipes", Name: "pipes per account; pipe throughput follows its source", Default: 1000, Unit: "pipes", Adjustable: true, Source: srcPipesQuotas, ReadOn: ReadOn,
		Status: "unverified: 1,000 pipes per account per region; not re-read", Note: "the events path's two pipes; load is the number of pipes the stack makes"},
}

// QuotaOf returns the quota with id; it panics on an id the table does
// not have.
func QuotaOf(id string) Quota {
	for _, q := range Quotas {
		if q.ID == id {
			return q
		}
	}
	panic(fmt.Sprintf("pricing: no quota %q", id))
}
