package main

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bowline-iot/bowline/cloud/iotdata"
	"github.com/bowline-iot/bowline/internal/pricing"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Env is what a stage runs against: the local stack, with every AWS call
// of Config counted (awscalls.Usage) and the broker metered
// (mqttbroker.Meter).
type Env struct {
	// BrokerURL is the embedded broker (tcp://127.0.0.1:port); Broker the
	// broker itself, which publishes inline (the local IoT data endpoint's).
	BrokerURL string
	Broker    iotdata.Broker
	// AWS is the stack's config; clients built from it are counted.
	// LocalAWS is the same stack uncounted, for what only a local
	// stand-in does and AWS does not bill (the event source's
	// checkpoints).
	AWS, LocalAWS aws.Config
	Names         resources.Names
	// Tenant and Gateways are the simulated fleet's, Bowls the things of
	// each gateway.
	Tenant   string
	Gateways []string
	Bowls    map[string][]string
	// Speed is how many times faster than real time the run's clock goes;
	// Now is that clock (sent_at, received_at, the consumer's cadences).
	Speed float64
	Now   func() time.Time
	Log   *slog.Logger
}

// RuleCounts is what the rule stand-in counts: every message that
// triggered a rule and every action executed (the Kinesis put; the error
// action when it runs), each with the 5 KB units it is metered in.
type RuleCounts struct {
	Evaluations, EvaluationUnits, Actions, ActionUnits int64
}

// Rules is the AWS IoT rules engine stand-in (branch rules): it takes the
// Basic Ingest publishes on $aws/rules/<rule>/... from the broker and puts
// a Kinesis record per message, as cloud/rules.TelemetryRule does in AWS.
// Its MQTT client id must satisfy IsStandIn, so that the meter does not
// bill its connection or the deliveries to it.
type Rules interface {
	// Start runs the stand-in until Close; it returns once it subscribed.
	Start(ctx context.Context, env Env) error
	// Counts may be called at any time; it is safe for concurrent use.
	Counts() RuleCounts
	Close() error
}

// ConsumerCounts is what the consumer counts of itself: batches handled
// (Lambda invocations) and their records, the handler time they took and
// the memory the function is configured with; the acknowledgements'
// HTTPS publishes and their 5 KB units, counted where the IoT data
// endpoint answers them (their deliveries are counted at the broker); the
// event source's checkpoint writes, which only the local stand-in makes.
type ConsumerCounts struct {
	Invocations int64         `json:"invocations"`
	Records     int64         `json:"records"`
	Handler     time.Duration `json:"handler_ns"`
	// CPU is the records' decoding timed again outside the handler: the
	// CPU-bound part of Handler.
	CPU      time.Duration `json:"cpu_ns"`
	MemoryMB int           `json:"memory_mb"`
	// BatchSize and BatchWindow are the event source mapping's.
	BatchSize   int           `json:"batch_size"`
	BatchWindow time.Duration `json:"batch_window_ns"`
	// Shards is the number of the stream's shards records came from.
	Shards            int     `json:"shards"`
	HTTPSPublishes    int64   `json:"https_publishes"`
	HTTPSPublishUnits int64   `json:"https_publish_units"`
	CheckpointWrites  int64   `json:"checkpoint_writes_not_billed"`
	CheckpointWRU     float64 `json:"checkpoint_wru_not_billed"`
}

// Consumer is the Kinesis consumer (cloud/durable behind the event source
// stand-in, locally `bowline consume`): it reads the stream, writes its
// state and rollups, and publishes acknowledgements over HTTPS
// (iotdata.Publisher to an iotdata.LocalEndpoint on Env.Broker).
type Consumer interface {
	Start(ctx context.Context, env Env) error
	Counts() ConsumerCounts
	Close() error
}

// The stages the run drives; nil means not measured.
var (
	// rulesStage is cloud/rules' stand-in (rules.go), landed on main.
	rulesStage Rules = new(ruleStandIn)
	// consumerStage is cloud/durable behind the event source stand-in
	// (consumer.go); main sets it with the run's cadences.
	consumerStage Consumer
)

// Why each stage is not measured when it is not wired.
var notWired = map[pricing.Stage]string{
	pricing.StageRules:    "rules and Kinesis writes — land with the rule stand-in (branch rules)",
	pricing.StageConsumer: "Kinesis reads, DynamoDB state and rollups, compute, acks — the consumer stage (consumer.go) did not run",
	pricing.StageQueues:   "SQS and Pipes — the telemetry path has none but the rule-errors queue, whose requests come with the rule stand-in",
}

// standInPrefix starts the client ids of local stand-ins for AWS
// services, which AWS would not bill as connections.
const standInPrefix = "aws-standin-"

// httpsPrefix starts the client ids of local stand-ins for HTTPS
// publishers.
const httpsPrefix = "aws-https-"

// IsStandIn reports whether id is a stand-in for an AWS service.
func IsStandIn(id string) bool { return strings.HasPrefix(id, standInPrefix) }

// IsHTTPSStandIn reports whether id stands in for an HTTPS publisher.
func IsHTTPSStandIn(id string) bool { return strings.HasPrefix(id, httpsPrefix) }
