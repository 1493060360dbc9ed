package pricing

import (
	"errors"
	"fmt"
	"time"
)

// Stage names a part of the path whose counts come from one place; a stage
// a run could not measure is named in Counts.NotMeasured.
type Stage string

// The stages of the data path.
const (
	// StageBroker: connections and MQTT messages, counted at the broker
	// (internal/mqttbroker.Meter).
	StageBroker Stage = "broker"
	// StageRules: rule evaluations and actions and the Kinesis writes they
	// make, counted at the rule stand-in.
	StageRules Stage = "rules"
	// StageConsumer: Kinesis reads, DynamoDB state and rollups, compute,
	// counted from the consumer's AWS calls (internal/awscalls.Usage) and
	// its measured time.
	StageConsumer Stage = "consumer"
	// StageAcks: acknowledgements published over HTTPS and delivered to
	// gateways.
	StageAcks Stage = "acks"
	// StageQueues: SQS and EventBridge Pipes requests.
	StageQueues Stage = "queues"
	// StageEvents: the bowl events' path (ingress, ingest's handler and
	// Emit, the Pipes, events.fifo, the worker and its subscribers, the
	// record-changes queue), counted in a pass of its own and added in
	// proportion to the fleet's events; the Pipes and SQS lines are
	// measured only with it.
	StageEvents Stage = "events"
)

// MessageCount is a number of AWS IoT Core messages and the 5 KB units
// they are metered as.
type MessageCount struct {
	Messages int64 `json:"messages"`
	Units    int64 `json:"units"`
}

// Add returns m plus o.
func (m MessageCount) Add(o MessageCount) MessageCount {
	return MessageCount{m.Messages + o.Messages, m.Units + o.Units}
}

// Counts is what one run measured. Every field is a count taken where the
// thing happens (the comments say where); nothing here is computed from
// a formula. Estimate scales them.
type Counts struct {
	// Duration is how long the counted part of the run lasted.
	Duration time.Duration `json:"duration"`
	// Gateways and Bowls are the simulated fleet.
	Gateways int `json:"gateways"`
	Bowls    int `json:"bowls"`

	// At the broker (mqttbroker.Meter), gateways' connections only.
	ConnectionSeconds float64 `json:"connection_seconds"`
	// Reconnects are sessions established by a client id already seen in
	// the run (the first connect of each gateway is the run's start-up,
	// not its steady state).
	Reconnects     int64 `json:"reconnects"`
	MaxConnections int64 `json:"max_connections"`
	// Messaging is every metered message but acknowledgements: PUBLISH in
	// and out, CONNECT, SUBSCRIBE, PUBACK received from a client.
	Messaging MessageCount `json:"messaging"`
	// BasicIngest is the publishes on $aws/rules/... topics: no messaging
	// charge, but they trigger rules and count against their own quota.
	BasicIngest  MessageCount `json:"basic_ingest"`
	PublishesIn  int64        `json:"publishes_in"`
	PublishesOut int64        `json:"publishes_out"`
	// The busiest connection of the run: its publishes (in and out), its
	// bytes (in and out) and its subscriptions; the largest message.
	MaxConnPublishes     int64 `json:"max_conn_publishes"`
	MaxConnBytes         int64 `json:"max_conn_bytes"`
	MaxConnSubscriptions int64 `json:"max_conn_subscriptions"`
	MaxMessageBytes      int64 `json:"max_message_bytes"`

	// Acknowledgements: Acks published, HTTPPublishes of them over HTTPS
	// (awscalls.Usage), AckMessaging their metered messages (the HTTPS
	// request, the delivery to the gateway, the gateway's PUBACK at QoS 1).
	Acks          int64        `json:"acks"`
	HTTPPublishes int64        `json:"http_publishes"`
	AckMessaging  MessageCount `json:"ack_messaging"`

	// At the rule stand-in: rules triggered and actions executed, and the
	// 5 KB units each is metered in.
	RuleEvaluations int64 `json:"rule_evaluations"`
	RuleUnits       int64 `json:"rule_units"`
	RuleActions     int64 `json:"rule_actions"`
	RuleActionUnits int64 `json:"rule_action_units"`

	// Kinesis, from the recorded calls (awscalls.Usage). BilledBytes
	// rounds each record up to 1 KB (on-demand data in); PutUnits are
	// 25 KB payload units. RunShards is the run's stream's shard count.
	KinesisRecords     int64 `json:"kinesis_records"`
	KinesisBytes       int64 `json:"kinesis_bytes"`
	KinesisBilledBytes int64 `json:"kinesis_billed_bytes"`
	KinesisPutUnits    int64 `json:"kinesis_put_units"`
	KinesisGetRecords  int64 `json:"kinesis_get_records"`
	KinesisBytesRead   int64 `json:"kinesis_bytes_read"`
	RunShards          int   `json:"run_shards"`

	// DynamoDB request units by table, and the busiest partition key's.
	WRU               map[string]float64 `json:"wru,omitempty"`
	RRU               map[string]float64 `json:"rru,omitempty"`
	MaxKeyWRU         float64            `json:"max_key_wru"`
	MaxKeyRRU         float64            `json:"max_key_rru"`
	StreamsGetRecords int64              `json:"streams_get_records"`

	// SQS and Pipes requests in 64 KB chunks; Pipes the pipes on the path.
	SQSRequests     int64 `json:"sqs_requests"`
	SQSFIFORequests int64 `json:"sqs_fifo_requests"`
	// SQSFIFOMessages is the messages sent to FIFO queues (the events
	// Pipe's), what the FIFO throughput quota counts.
	SQSFIFOMessages int64 `json:"sqs_fifo_messages"`
	PipesRequests   int64 `json:"pipes_requests"`
	Pipes           int   `json:"pipes"`

	// Consumer compute: invocations (batches handled) and GB-seconds
	// (measured handler time x configured memory).
	LambdaInvocations int64   `json:"lambda_invocations"`
	LambdaGBSeconds   float64 `json:"lambda_gb_seconds"`
	// LambdaBatchSize and LambdaBatchWindow are the event source mapping's
	// BatchSize and MaximumBatchingWindowInSeconds. When set, invocations
	// at scale follow the records per shard (a run's few records per shard
	// fill no batch, a fleet's do) instead of growing with gateways: see
	// invocationsPerMonth.
	LambdaBatchSize   int           `json:"lambda_batch_size,omitempty"`
	LambdaBatchWindow time.Duration `json:"lambda_batch_window,omitempty"`

	// Events is the events stream (a stream of its own, partitioned by
	// tenant) and its consumer (cloud/ingest behind the events mapping);
	// zero when the run drove no events.
	Events StreamCounts `json:"events_stream"`

	// NotMeasured names the stages the run could not measure and why
	// ("lands with cloud/durable").
	NotMeasured map[Stage]string `json:"not_measured,omitempty"`
}

// Validate checks that the counts can be scaled.
func (c Counts) Validate() error {
	var errs []error
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %v: want > 0", c.Duration))
	}
	if c.Gateways < 1 || c.Bowls < 1 {
		errs = append(errs, fmt.Errorf("%d gateways, %d bowls: want at least one of each", c.Gateways, c.Bowls))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pricing: counts: %w", err)
	}
	return nil
}

// Measured reports whether stage was measured in the run.
func (c Counts) Measured(s Stage) bool {
	_, missing := c.NotMeasured[s]
	return !missing
}

// StreamCounts is what a run counted of one more Kinesis stream and the
// Lambda consumer behind it. Its counts grow with bowls (a bowl's events),
// not with gateways.
type StreamCounts struct {
	// Records, Bytes, BilledBytes (each record rounded up to 1 KB) and
	// PutUnits (25 KB) put into the stream; BytesRead by its consumer.
	Records     int64 `json:"kinesis_records"`
	Bytes       int64 `json:"kinesis_bytes"`
	BilledBytes int64 `json:"kinesis_billed_bytes"`
	PutUnits    int64 `json:"kinesis_put_units"`
	BytesRead   int64 `json:"kinesis_bytes_read"`
	// Invocations are the run's handler calls (shown, not scaled: see
	// invocationsPerMonth); GBSeconds the measured handler time at the
	// function's memory.
	Invocations int64   `json:"lambda_invocations"`
	GBSeconds   float64 `json:"lambda_gb_seconds"`
	// BatchSize and BatchWindow are the mapping's.
	BatchSize   int           `json:"lambda_batch_size,omitempty"`
	BatchWindow time.Duration `json:"lambda_batch_window,omitempty"`
}
