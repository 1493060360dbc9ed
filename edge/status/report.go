package status

import (
	"time"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
)

// The /status document is wire.GatewayStatus: the cloud console reads it
// too, so its shape lives in the MQTT contract package (edge/wire). The
// functions here fill its parts from the agent's parts.

// AcksFrom builds the acks report at now from the telemetry lane's stats
// and the forwarder's telemetry status.
func AcksFrom(lane outbox.LaneStats, fs wire.TelemetryStatus, now time.Time) wire.AcksStatus {
	a := wire.AcksStatus{
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

// DiskFrom builds the disk report of the outbox file at path from its
// stats.
func DiskFrom(path string, s outbox.Stats) wire.DiskStatus {
	return wire.DiskStatus{
		Path: path, FileBytes: s.FileBytes, FileFreeBytes: s.FreeBytes,
		FSFreeBytes: s.Budget.FSFreeBytes, CapBytes: s.MaxBytes,
		EffectiveMaxBytes: s.Budget.EffectiveMaxBytes, DiskLimited: s.Budget.DiskLimited,
	}
}

// LaneFrom converts outbox lane stats at now.
func LaneFrom(s outbox.LaneStats, now time.Time) wire.LaneStatus {
	l := wire.LaneStatus{Backlog: s.Records, Bytes: s.Bytes, Dropped: s.Dropped}
	if !s.Oldest.IsZero() {
		l.OldestAgeSeconds = max(0, now.Sub(s.Oldest).Seconds())
	}
	return l
}
