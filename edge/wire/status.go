package wire

import "time"

// GatewayStatus is the gateway agent's /status document: what the agent
// serves (edge/status) and what the cloud console and the chaos harness
// read from it over HTTP. testdata/status.json is one, produced by the
// agent's real report code and decoded by the console in its tests.
type GatewayStatus struct {
	Tenant  string        `json:"tenant"`
	Gateway string        `json:"gateway"`
	Uptime  time.Duration `json:"uptime_ns"`
	Lanes   LanesStatus   `json:"lanes"`
	Disk    DiskStatus    `json:"disk"`
	MQTT    MQTTStatus    `json:"mqtt"`
	// Acks is the cloud's acknowledgement of telemetry (wire v2).
	Acks  AcksStatus   `json:"acks"`
	Bowls []BowlStatus `json:"bowls"`
}

// MQTTStatus is the forwarder's state (edge/forward): the connection,
// the publishes and the cloud's telemetry acknowledgements.
type MQTTStatus struct {
	Connected  bool      `json:"connected"`
	Broker     string    `json:"broker"`
	LastPuback time.Time `json:"last_puback,omitzero"`
	LastError  string    `json:"last_error,omitempty"`
	Connects   int       `json:"connects"`
	InFlight   int       `json:"in_flight"`
	Published  int64     `json:"published"`
	Acked      int64     `json:"acked"`
	// PubackTimeouts counts publishes that got no PUBACK within the
	// forwarder's PubackTimeout, each of which ended its session.
	PubackTimeouts int64 `json:"puback_timeouts"`
	// Telemetry is the state of the cloud acknowledgements (wire v2).
	Telemetry TelemetryStatus `json:"telemetry"`
}

// TelemetryStatus is what the forwarder knows of telemetry sent and
// acknowledged by the cloud (wire v2; zero in v1).
type TelemetryStatus struct {
	Wire string `json:"wire"`
	// UnackedSent counts samples published (PUBACKed or in flight) in
	// this run and not yet acknowledged by the cloud; OldestUnackedSent
	// is when the oldest of them was published.
	UnackedSent       int64     `json:"unacked_sent_samples"`
	OldestUnackedSent time.Time `json:"oldest_unacked_sent,omitzero"`
	// Batches and BatchBytes count batch payloads published and their
	// bytes; BatchSamples the samples they carried (resends included).
	Batches      int64 `json:"batches"`
	BatchBytes   int64 `json:"batch_bytes"`
	BatchSamples int64 `json:"batch_samples"`
	// LastAck is when the last cloud ack was applied. AcksApplied counts
	// acks applied, AcksIgnored acks of another outbox instance, AcksBad
	// acks that did not decode; AckedSamples the records acks removed.
	LastAck      time.Time `json:"last_ack,omitzero"`
	AcksApplied  int64     `json:"acks_applied"`
	AcksIgnored  int64     `json:"acks_ignored"`
	AcksBad      int64     `json:"acks_bad"`
	AckedSamples int64     `json:"acked_samples"`
}

// LanesStatus holds one report per outbox lane.
type LanesStatus struct {
	Events    LaneStatus `json:"events"`
	Telemetry LaneStatus `json:"telemetry"`
}

// LaneStatus is one outbox lane.
type LaneStatus struct {
	Backlog int64 `json:"backlog"`
	Bytes   int64 `json:"bytes"`
	// OldestAgeSeconds is the age of the oldest pending record (0: none).
	OldestAgeSeconds float64 `json:"oldest_age_s"`
	Dropped          int64   `json:"dropped"`
}

// DiskStatus is the outbox file's use and its budget (docs/disk-budget.md).
type DiskStatus struct {
	Path string `json:"path"`
	// FileBytes is the file's size on the file system.
	FileBytes int64 `json:"file_bytes"`
	// FileFreeBytes is free space inside the file (bbolt's free pages,
	// reused before the file grows), not on the disk: that is FSFreeBytes.
	FileFreeBytes int64 `json:"file_free_bytes"`
	// FSFreeBytes is the space left on the file system that holds the
	// file (-1: unknown).
	FSFreeBytes int64 `json:"fs_free_bytes"`
	// CapBytes is the configured cap (outbox.max_bytes);
	// EffectiveMaxBytes the cap in force, lowered to what the disk can
	// hold, and DiskLimited whether the disk lowered it.
	CapBytes          int64 `json:"cap_bytes"`
	EffectiveMaxBytes int64 `json:"effective_max_bytes"`
	DiskLimited       bool  `json:"disk_limited"`
}

// AcksStatus is the telemetry waiting for the cloud's acknowledgement. In wire
// v2 the cloud acknowledges what is durable in its stream and only then
// does the gateway delete it (docs/telemetry-path.md); in wire v1 a PUBACK
// deletes it and only the counts of the outbox mean anything.
type AcksStatus struct {
	Wire string `json:"wire"`
	// UnackedSamples counts telemetry records not acknowledged (in the
	// outbox); OldestUnackedAgeSeconds is the age of the oldest of them.
	UnackedSamples          int64   `json:"unacked_samples"`
	OldestUnackedAgeSeconds float64 `json:"oldest_unacked_age_s"`
	// UnackedSentSamples counts those sent (published) in this run;
	// OldestUnackedSentAgeSeconds is how long ago the oldest was sent.
	// Past the ack timeout they are sent again.
	UnackedSentSamples          int64   `json:"unacked_sent_samples"`
	OldestUnackedSentAgeSeconds float64 `json:"oldest_unacked_sent_age_s"`
	// LastAck is when the last ack was applied.
	LastAck time.Time `json:"last_ack,omitzero"`
	// AcksApplied, AcksIgnored (another outbox instance), AcksBad (not
	// an ack) count acks received; AckedSamples the records they removed.
	AcksApplied  int64 `json:"acks_applied"`
	AcksIgnored  int64 `json:"acks_ignored"`
	AcksBad      int64 `json:"acks_bad"`
	AckedSamples int64 `json:"acked_samples"`
}

// BowlStatus is one firmware-bridge input.
type BowlStatus struct {
	Input     string    `json:"input"`
	Device    string    `json:"device,omitempty"`
	Connected bool      `json:"connected"`
	LastSeen  time.Time `json:"last_seen,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}
