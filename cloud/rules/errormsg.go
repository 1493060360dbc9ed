package rules

// ErrorMessage is what a rule's error action receives for a message whose
// action failed: the shape of AWS IoT's error action message ("Error
// handling (error action)" in the AWS IoT developer guide;
// docs/telemetry-path.md, "The rules"). One message per rule and message,
// with one Failure per failed action.
type ErrorMessage struct {
	// RuleName is the full rule name (Spec.Name).
	RuleName string `json:"ruleName"`
	// Topic is the topic the message arrived on. The stand-in writes the
	// topic as published, the Basic Ingest prefix included.
	Topic string `json:"topic"`
	// CloudwatchTraceID is AWS's reference into its logs; the stand-in
	// has none.
	CloudwatchTraceID string `json:"cloudwatchTraceId,omitempty"`
	// ClientID is the publisher's MQTT client id, when known. An MQTT 3.1.1
	// subscriber is never told it, so the stand-in leaves it out.
	ClientID string `json:"clientId,omitempty"`
	// Base64OriginalPayload is the message payload, standard base64.
	Base64OriginalPayload string    `json:"base64OriginalPayload"`
	Failures              []Failure `json:"failures"`
}

// Failure is one failed action of an ErrorMessage.
type Failure struct {
	// FailedAction is the action's name ("KinesisAction").
	FailedAction string `json:"failedAction"`
	// FailedResource is what it acted on (the stream name).
	FailedResource string `json:"failedResource"`
	ErrorMessage   string `json:"errorMessage"`
}

// KinesisAction is the FailedAction of the Kinesis action. AWS's example
// names an S3 action "S3Action"; the Kinesis name follows that pattern
// (assumed).
const KinesisAction = "KinesisAction"

// MeterBytes is AWS IoT's metering increment for rules triggered and
// actions executed: 5 KB (assumed 5 x 1024 bytes).
const MeterBytes = 5 * 1024

// Units is the metering units of a message of n bytes: n in 5 KB
// increments, at least one.
func Units(n int) int64 {
	if n <= MeterBytes {
		return 1
	}
	return int64((n + MeterBytes - 1) / MeterBytes)
}
