package main

import (
	"time"

	"github.com/bowline-iot/bowline/internal/mqttbroker"
	"github.com/bowline-iot/bowline/internal/pricing"
)

// The design's numbers (docs/telemetry-path.md), for --design: what one
// hour of 1,000 gateways and 1,500 bowls would count if the design runs
// as written. They are assumptions, not measurements, and the output says
// so; a run replaces every one of them by a count.
const (
	designGateways = 1000
	designBowls    = 1500
	// One batch per gateway per minute through Basic Ingest, 2.5 KB (the
	// middle of 2-3 KB), on a topic of about 60 bytes.
	designBatchesPerHour = 60
	designBatchBytes     = 2560
	designTopicBytes     = 60
	// The Kinesis record the rule writes: JSON around the base64 payload
	// (4/3 of it) and about 100 bytes of fields and partition key.
	designRecordBytes = designBatchBytes*4/3 + 100
	// One ack per gateway per 10 minutes, published over HTTPS at QoS 0,
	// about 160 bytes of JSON: one 5 KB unit for the request, one for the
	// delivery, no PUBACK.
	designAcksPerHour = 6
	designAckBytes    = 160
	// A gateway reconnects about once a day (CONNECT and SUBSCRIBE, one
	// unit each).
	designReconnectsPerHour = designGateways / 24
	// The consumer's state row is written once per ack, under 1 KB.
	designWRUPerAck = 1
	// Compute: 256 MB arm64, 1 ms per record plus 10 ms per invocation of
	// 100 records.
	designMemoryGB       = 0.25
	designMsPerRecord    = 1.0
	designMsPerBatch     = 10.0
	designRecordsPerCall = 100
)

// designCounts are the design's counts for one hour (see the constants).
func designCounts() pricing.Counts {
	batches := int64(designGateways * designBatchesPerHour)
	acks := int64(designGateways * designAcksPerHour)
	record := int64(designRecordBytes)
	calls := batches / designRecordsPerCall
	ruleUnits := mqttbroker.Units(designBatchBytes + designTopicBytes)
	return pricing.Counts{
		Duration: time.Hour, Gateways: designGateways, Bowls: designBowls,
		ConnectionSeconds:    designGateways * 3600,
		Reconnects:           designReconnectsPerHour,
		MaxConnections:       designGateways,
		Messaging:            pricing.MessageCount{Messages: 2 * designReconnectsPerHour, Units: 2 * designReconnectsPerHour},
		BasicIngest:          pricing.MessageCount{Messages: batches, Units: batches * ruleUnits},
		PublishesOut:         acks,
		MaxConnPublishes:     designBatchesPerHour + designAcksPerHour,
		MaxConnBytes:         designBatchesPerHour*(designBatchBytes+designTopicBytes) + designAcksPerHour*(designAckBytes+40),
		MaxConnSubscriptions: 1,
		MaxMessageBytes:      designBatchBytes,
		Acks:                 acks,
		HTTPPublishes:        acks,
		AckMessaging:         pricing.MessageCount{Messages: 2 * acks, Units: 2 * acks * mqttbroker.Units(designAckBytes)},
		RuleEvaluations:      batches,
		RuleUnits:            batches * ruleUnits,
		RuleActions:          batches,
		RuleActionUnits:      batches * mqttbroker.Units(designRecordBytes),
		KinesisRecords:       batches,
		KinesisBytes:         batches * record,
		KinesisBilledBytes:   batches * ((record + 1023) / 1024 * 1024),
		KinesisPutUnits:      batches * ((record + 25*1024 - 1) / (25 * 1024)),
		KinesisGetRecords:    3600,
		KinesisBytesRead:     batches * record,
		RunShards:            1,
		WRU:                  map[string]float64{"telemetry_state": float64(acks * designWRUPerAck)},
		MaxKeyWRU:            designAcksPerHour * designWRUPerAck,
		LambdaInvocations:    calls,
		LambdaGBSeconds:      (float64(batches)*designMsPerRecord + float64(calls)*designMsPerBatch) / 1000 * designMemoryGB,
	}
}
