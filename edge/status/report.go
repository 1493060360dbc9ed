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
	Bowls   []Bowl         `json:"bowls"`
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

// Disk is the outbox file's use.
type Disk struct {
	Path      string `json:"path"`
	FileBytes int64  `json:"file_bytes"`
	FreeBytes int64  `json:"free_bytes"`
	CapBytes  int64  `json:"cap_bytes"`
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
