package status

import (
	"time"

	"github.com/bowline-iot/bowline/edge/forward"
	"github.com/bowline-iot/bowline/edge/outbox"
)

// Report is the /status document.
type Report struct {
	Tenant  string         `json:"tenant"`
	Gateway string         `json:"gateway"`
	Uptime  time.Duration  `json:"uptime_ns"`
	Lanes   LaneReports    `json:"lanes"`
	Disk    Disk           `json:"disk"`
	MQTT    forward.Status `json:"mqtt"`
	// Acks is the cloud's acknowledgement of telemetry (wire v2).
	Acks  Acks   `json:"acks"`
	Bowls []Bowl `json:"bowls"`
}

// Acks is the telemetry waiting for the cloud's acknowledgement. In wire
// v2 the cloud acknowledges what is durable in its stream and only then
// does the gateway delete it (docs/telemetry-path.md); in wire v1 a PUBACK
// deletes it and only the counts of the outbox mean anything.
type Acks struct {
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

// AcksFrom builds the Acks report at now from the telemetry lane's stats
// and the forwarder's telemetry status.
func AcksFrom(lane outbox.LaneStats, fs forward.TelemetryStatus, now time.Time) Acks {
	a := Acks{
		Wire: fs.Wire, UnackedSamples: lane.Records, UnackedSentSamples: fs.UnackedSent,
		LastAck: fs.LastAck, AcksApplied: fs.AcksApplied, AcksIgnored: fs.AcksIgnored, AcksBad: fs.AcksBad, AckedSamples: fs.AckedSamples,
	}
	if !lane.Oldest.IsZero() {
		a.OldestUnackedAgeSeconds = max(0, now.Sub(lane.Oldest).Seconds())
	}
	if !fs.OldestUnackedSent.IsZero() {
		a.OldestUnackedSentAgeSeconds = max(0, now.Sub(fs.OldestUnackedSent).Seconds())
	}
	return a
}

// LaneReports holds one report per outbox lane.
type LaneReports struct {
	Events    Lane `json:"events"`
	Telemetry Lane `json:"telemetry"`
}

// Lane is one outbox lane.
type Lane struct {
	Backlog int64 `json:"backlog"`
	Bytes   int64 `json:"bytes"`
	// OldestAgeSeconds is the age of the oldest pending record (0: none).
	OldestAgeSeconds float64 `json:"oldest_age_s"`
	Dropped          int64   `json:"dropped"`
}

// Disk is the outbox file's use and its budget (docs/disk-budget.md).
type Disk struct {
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

// DiskFrom builds the Disk report of the outbox file at path from its
// stats.
func DiskFrom(path string, s outbox.Stats) Disk {
	return Disk{
		Path: path, FileBytes: s.FileBytes, FileFreeBytes: s.FreeBytes,
		FSFreeBytes: s.Budget.FSFreeBytes, CapBytes: s.MaxBytes,
		EffectiveMaxBytes: s.Budget.EffectiveMaxBytes, DiskLimited: s.Budget.DiskLimited,
	}
}

// Bowl is one firmware-bridge input.
type Bowl struct {
	Input     string    `json:"input"`
	Device    string    `json:"device,omitempty"`
	Connected bool      `json:"connected"`
	LastSeen  time.Time `json:"last_seen,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}

// LaneFrom converts outbox lane stats at now.
func LaneFrom(s outbox.LaneStats, now time.Time) Lane {
	l := Lane{Backlog: s.Records, Bytes: s.Bytes, Dropped: s.Dropped}
	if !s.Oldest.IsZero() {
		l.OldestAgeSeconds = max(0, now.Sub(s.Oldest).Seconds())
	}
	return l
}
