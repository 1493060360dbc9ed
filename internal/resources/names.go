// Package resources names every AWS resource Bowline uses, from one stack
// prefix, so that provisioning, the engine, the relay, the worker and the
// deploy templates cannot disagree about a table or queue name.
//
// The prefix comes from BOWLINE_STACK (default "dev"): stack "dev" gives the
// table "dev-bowline-events", the queue "dev-bowline-events.fifo" and so on.
package resources

import (
	"fmt"
	"os"
	"regexp"
)

// DefaultStack is the stack prefix used when BOWLINE_STACK is unset.
const DefaultStack = "dev"

// StackEnv is the environment variable that selects the stack prefix.
const StackEnv = "BOWLINE_STACK"

var stackPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Names derives resource names from a stack prefix. The zero value is not
// valid; use New or FromEnv.
type Names struct {
	Stack string
}

// New returns the names for stack, or an error naming the stack when it is
// not 1-32 lowercase letters, digits and hyphens.
func New(stack string) (Names, error) {
	if !stackPattern.MatchString(stack) {
		return Names{}, fmt.Errorf("stack %q: want 1-32 lowercase letters, digits or hyphens, starting with a letter or digit", stack)
	}
	return Names{Stack: stack}, nil
}

// FromEnv returns the names for $BOWLINE_STACK, or for DefaultStack when it
// is unset or empty.
func FromEnv() (Names, error) {
	s := os.Getenv(StackEnv)
	if s == "" {
		s = DefaultStack
	}
	n, err := New(s)
	if err != nil {
		return Names{}, fmt.Errorf("%s: %w", StackEnv, err)
	}
	return n, nil
}

func (n Names) name(base string) string { return n.Stack + "-bowline-" + base }

// EventsTable holds the per-tenant hash-chained event log and chain heads:
// TENANT#<t>#EVENT and TENANT#<t>#HEAD rows (engine/keys.go). pk and sk,
// stream, no TTL. docs/tables.md lists every row kind of every table.
func (n Names) EventsTable() string { return n.name("events") }

// InboxTable holds the rows that make writes idempotent or remember a
// position, each kind under its own pk prefix: IDEMP# (engine/inbox), EMIT#
// (engine), RELAY# (engine/relay), ESM# (cloud/eventsource), APIKEY# and PAYMENT# (cloud/api) and
// INGEST# (cloud/ingest). pk only, TTL attribute "ttl".
func (n Names) InboxTable() string { return n.name("inbox") }

// DeadLettersTable holds tenant-scoped dead letters (TENANT#), poison pills
// (POISON) and unmatched-event counters (UNMATCHED), all written through
// engine/deadletter. pk and sk, no TTL.
func (n Names) DeadLettersTable() string { return n.name("dead_letters") }

// AppTable holds business rows: ORDER# (cloud/api), DEVICE# (cloud/devices),
// SEQ# (cloud/ingest), PET#, CONTACT# and FAULT# (cloud/subscribers). pk and sk,
// stream (the record-change lane), no TTL.
func (n Names) AppTable() string { return n.name("app") }

// AnchorsTable holds the chain anchors: each tenant's (seq, hash) as the
// anchor job (engine/anchor) verified it, one row per anchored position
// (ANCHOR#<t>), and the tenant registry (TENANTS). pk and sk, no stream, no
// TTL. Only the anchor job's role may write it (docs/chain.md).
func (n Names) AnchorsTable() string { return n.name("anchors") }

// EventsQueue is the SQS FIFO queue the relay feeds and the worker drains.
func (n Names) EventsQueue() string { return n.name("events.fifo") }

// EventsDLQ is the dead-letter queue of EventsQueue.
func (n Names) EventsDLQ() string { return n.name("events-dlq.fifo") }

// RecordChangesQueue is the standard queue fed from the app table stream.
func (n Names) RecordChangesQueue() string { return n.name("record-changes") }

// PipesDLQ is the standard queue that takes the dead letters of both pipes
// (the relay's and the EventBridge Pipes'): records SQS would not accept.
func (n Names) PipesDLQ() string { return n.name("pipes-dlq") }

// TelemetryStream is the Kinesis stream for high-rate telemetry: the
// system of record of every sample (docs/telemetry-path.md).
func (n Names) TelemetryStream() string { return n.name("telemetry") }

// EventsStream is the Kinesis stream of bowl events: the events topic
// rule puts every event a gateway publishes into it with the tenant as
// partition key, and the events consumer (`bowline ingest`) emits them
// into the chain (docs/events-path.md). A Kinesis stream and a DynamoDB
// table live in different namespaces, so it shares EventsTable's name.
func (n Names) EventsStream() string { return n.name("events") }

// EventsConsumerDLQ is the standard queue the events stream's event
// source mapping describes every batch it gave up on (its records older
// than the stream's retention), as TelemetryConsumerDLQ is for telemetry.
func (n Names) EventsConsumerDLQ() string { return n.name("events-consumer-dlq") }

// TelemetryTable holds the telemetry consumer's state: per gateway the seq
// spans it has seen in the stream and when it last acknowledged them
// (GW#), and per bowl the bounded rollups the console reads (ROLLUP#).
// pk and sk, no stream (nothing subscribes to these rows), TTL attribute
// "ttl" (docs/tables.md).
func (n Names) TelemetryTable() string { return n.name("telemetry_state") }

// RuleErrorsQueue is the standard queue the telemetry topic rules' error
// action writes every message it could not put into the stream to (and
// the local rule stand-in too), with an alarm on its depth.
func (n Names) RuleErrorsQueue() string { return n.name("rule-errors") }

// TelemetryConsumerDLQ is the standard queue the telemetry stream's event
// source mapping (Lambda's, and `bowline consume`'s stand-in) describes
// every batch it gave up on: retries exhausted or records too old
// (cloud/eventsource, docs/telemetry-path.md). Alarmed on its depth.
func (n Names) TelemetryConsumerDLQ() string { return n.name("telemetry-consumer-dlq") }

// TelemetryRetentionHours is the telemetry stream's retention: longer than
// any consumer outage we plan for, since the stream is the system of record
// until a gateway has been told its data is durable (docs/telemetry-path.md).
const TelemetryRetentionHours = 168

// EventsRetentionHours is the events stream's retention: a bowl event is
// durable once its record is in the stream (the gateway forgot it at the
// rules engine's PUBACK), so the stream keeps it longer than any consumer
// outage we plan for (docs/events-path.md).
const EventsRetentionHours = 168

// EventsMaxReceiveCount is the events queue's redrive maxReceiveCount: the
// number of receives after which SQS moves a message to EventsDLQ. It is a
// safety net well above the worker's retry budget (engine/worker
// DefaultMaxAttempts, 5 attempts retried in place within one receive):
// receives are spent only by crashes, shutdowns and holds that outlast
// their bound (docs/delivery.md).
const EventsMaxReceiveCount = 10
