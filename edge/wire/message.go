package wire

import (
	"encoding/json"
	"time"
)

// Version is the payload version ("v") of every message; ingest refuses
// any other.
const Version = 1

// MaxPayload bounds a message in bytes: 131072 (128 KB), AWS IoT Core's
// limit. It is the default of both the forwarder's and ingest's limit.
const MaxPayload = 128 << 10

// Event types a gateway publishes on its events topic. Each has its data
// type (events.go: MealFinished, ...); the cloud catalog (cloud/catalog)
// declares them.
const (
	// TypeMealFinished: a pet finished a meal (edge/detect).
	TypeMealFinished = "bowl.meal_finished"
	// TypeRefilled: the bowl was refilled (edge/detect).
	TypeRefilled = "bowl.refilled"
	// TypeFoodLow: the food level fell below the threshold (edge/detect).
	TypeFoodLow = "bowl.food_low"
	// TypeEmpty: the bowl is empty (edge/detect).
	TypeEmpty = "bowl.empty"
	// TypeDeviceFault: the bowl's firmware reported a fault (edge/agent).
	TypeDeviceFault = "bowl.device_fault"
	// TypeTelemetryDropped: the gateway dropped unsent telemetry, seqs
	// from_seq..to_seq (edge/outbox: disk cap or TTL).
	TypeTelemetryDropped = "bowl.telemetry_dropped"
	// TypeCounterReset: the bowl's MCU restarted its sequence counter under
	// the same device id (a new boot epoch: board swap, flash erase); the
	// readings of the new counter are kept (edge/agent).
	TypeCounterReset = "bowl.counter_reset"
)

// EventTypes lists every event type a gateway publishes: those with a data
// type (Decode).
var EventTypes = eventTypes()

func eventTypes() []string {
	out := make([]string, 0, len(deviceData))
	for _, d := range deviceData {
		out = append(out, d.EventType())
	}
	return out
}

// TelemetryMessage is the payload on a telemetry topic: a batch of one
// thing's samples, sample i with seq Seq+i.
type TelemetryMessage struct {
	V       int      `json:"v"`
	Thing   string   `json:"thing"`
	Seq     uint64   `json:"seq"`
	Samples []Sample `json:"samples"`
	// SentAt is the gateway's clock when it encoded the message; ingest
	// compares it with the receive time to detect and correct a wrong
	// gateway clock (docs/clock.md). Absent from older gateways.
	SentAt time.Time `json:"sent_at,omitzero"`
}

// LastSeq is the seq of the message's last sample.
func (m TelemetryMessage) LastSeq() uint64 { return m.Seq + uint64(len(m.Samples)) - 1 }

// Sample is one reading in a TelemetryMessage.
type Sample struct {
	// T is when it was read (RFC 3339, UTC).
	T time.Time `json:"t"`
	// Kind is what was read, a lowercase identifier such as "weight_g".
	Kind  string  `json:"kind"`
	Value float64 `json:"value"`
}

// EventMessage is the payload on an events topic: one detected event.
type EventMessage struct {
	V     int    `json:"v"`
	Thing string `json:"thing"`
	Seq   uint64 `json:"seq"`
	// ID is unique per thing and the same on every redelivery (ValidName).
	ID   string    `json:"id"`
	Type string    `json:"type"`
	At   time.Time `json:"at"`
	// Data is the type's data object; {} when it has none.
	Data json.RawMessage `json:"data"`
	// SentAt is as in TelemetryMessage. It is not part of the event's
	// identity: a redelivery may carry another SentAt.
	SentAt time.Time `json:"sent_at,omitzero"`
}

// Gateway states in a StatusMessage.
const (
	StateOnline  = "online"
	StateOffline = "offline"
)

// StatusMessage is the retained payload on a gateway's status topic: online
// when it connects, offline as its last will.
type StatusMessage struct {
	V     int    `json:"v"`
	Thing string `json:"thing"`
	State string `json:"state"`
}
