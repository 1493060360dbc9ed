package outbox

import (
	"fmt"
	"log/slog"
	"time"
)

// Config configures an Outbox. Zero fields take the documented defaults.
type Config struct {
	// Path of the bbolt file. Required.
	Path string
	// MaxBytes caps the logical size of all stored records. Default 256 MiB.
	// The cap in force is lower when the disk cannot hold it: see
	// DiskHeadroom and Budget.
	MaxBytes int64
	// DiskHeadroom is file system space the outbox leaves unused when it
	// budgets its file: every commit lowers the effective cap to the
	// stored records plus what the file can still grow into (its free
	// pages and the file system's free space minus DiskHeadroom, halved for
	// bbolt's copy-on-write), so a full disk drops the oldest telemetry
	// and reports it instead of failing the commit with ENOSPC. The
	// headroom is what a single commit may take beyond that estimate. It
	// is also the size of the ballast file kept beside the outbox file
	// (<Path>.ballast), freed only when a commit meets ENOSPC.
	// Default 1 MiB.
	DiskHeadroom int64
	// EventReserve is the part of MaxBytes telemetry may never use, kept for
	// events. Default MaxBytes/10.
	EventReserve int64
	// TelemetryTTL drops telemetry that has waited in the outbox longer
	// than this (reported as a drop). Waiting time is the outbox's age
	// clock (see Elapsed), never the wall clock, so a clock step cannot
	// expire a backlog. Default 7 days; negative disables.
	TelemetryTTL time.Duration
	// EventTTL drops events that have waited longer than this (age clock,
	// as TelemetryTTL). Default 0: never.
	EventTTL time.Duration
	// MaxBatch bounds how many queued operations share one transaction.
	// Default 4096.
	MaxBatch int
	// CompactFreeRatio: Open and Compact rewrite the file when more than this
	// fraction of it is free and it is larger than CompactMinBytes.
	// Default 0.5.
	CompactFreeRatio float64
	// CompactMinBytes: files smaller than this are never compacted.
	// Default 16 MiB.
	CompactMinBytes int64
	// NoSync skips fsync (benchmarks of the non-durable path only).
	NoSync bool
	// Now is the wall clock (tests). Default time.Now.
	Now func() time.Time
	// Elapsed is a monotonic clock: time since any fixed point, never
	// stepped. The outbox's age clock advances by it while the outbox is
	// open and is stored in the file, so the age of a record is the time
	// the outbox was open since the record was appended (time powered off
	// does not count). Default: differences of Now, which with time.Now
	// are Go's monotonic clock readings (immune to wall clock steps); a
	// test or simulation that sets Now gets its own clock's differences.
	Elapsed func() time.Duration
	// Logger receives drops, expiries and recovery notes. Default slog.Default().
	Logger *slog.Logger
	// Observer is told about commits and drops (status.Metrics); default
	// NopObserver.
	Observer Observer
}

func (c *Config) setDefaults() {
	if c.MaxBytes == 0 {
		c.MaxBytes = 256 << 20
	}
	if c.EventReserve == 0 {
		c.EventReserve = c.MaxBytes / 10
	}
	if c.DiskHeadroom == 0 {
		c.DiskHeadroom = 1 << 20
	}
	if c.TelemetryTTL == 0 {
		c.TelemetryTTL = 7 * 24 * time.Hour
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 4096
	}
	if c.CompactFreeRatio == 0 {
		c.CompactFreeRatio = 0.5
	}
	if c.CompactMinBytes == 0 {
		c.CompactMinBytes = 16 << 20
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	switch {
	case c.Path == "":
		return fmt.Errorf("outbox config: path: must be set")
	case c.MaxBytes < 0:
		return fmt.Errorf("outbox config: max_bytes %d: must not be negative", c.MaxBytes)
	case c.EventReserve < 0 || (c.MaxBytes > 0 && c.EventReserve >= c.MaxBytes):
		return fmt.Errorf("outbox config: event_reserve %d: must be in [0, max_bytes)", c.EventReserve)
	case c.DiskHeadroom < 0:
		return fmt.Errorf("outbox config: disk_headroom %d: must not be negative", c.DiskHeadroom)
	case c.EventTTL < 0:
		return fmt.Errorf("outbox config: event_ttl %s: must not be negative", c.EventTTL)
	case c.MaxBatch < 0:
		return fmt.Errorf("outbox config: max_batch %d: must not be negative", c.MaxBatch)
	case c.CompactFreeRatio < 0 || c.CompactFreeRatio >= 1:
		return fmt.Errorf("outbox config: compact_free_ratio %g: must be in [0, 1)", c.CompactFreeRatio)
	}
	return nil
}
