// Package outbox is the gateway's durable buffer: a bbolt file holding the
// readings and events the agent has accepted but the cloud has not yet
// acknowledged.
//
// There are two lanes, [Events] and [Telemetry]. Each lane keeps its own
// per-thing sequence (the "seq" of the MQTT payloads). An event stays in
// the file until [Outbox.Ack] removes it after its PUBACK; telemetry until
// [Outbox.AckTelemetry] removes it on the cloud's acknowledgement (wire v2)
// or, in wire v1, until Ack removes it after its PUBACK.
//
// # Instance id
//
// Every file has an instance id ([Outbox.ID], 16 random bytes in hex) in
// its meta bucket, created with the file and kept by Compact and Recover
// (which copy the records with their seqs). The cloud acknowledges
// telemetry by (thing, outbox id, seq); AckTelemetry ignores an ack of
// another id ([ErrOtherOutbox]), because a recreated file restarts its
// seqs at 1, and it never removes a seq above the highest the caller says
// it has sent. A file written before ids existed gets one on open: its
// seqs continue where they were, so the new id names no seq any ack could
// have named before.
//
// Writes use group commit: every [Outbox.Append], [Outbox.Ack] and seal
// issued while a transaction is being written joins the next one, so many
// records share a single fsync. Append returns only after that fsync, which
// is when the caller may acknowledge the data to its own source.
//
// Wire v2 reads telemetry with [Outbox.Telemetry], record by record: every
// record has a fixed seq, so any resend of a seq carries the same sample.
// Wire v1 reads it in sealed batches ([Outbox.TelemetryBatch]): the first
// time a run of samples is handed to the forwarder its boundaries are
// written down, so a message retried after a crash carries the same seq
// and the same samples and the cloud can drop the duplicate by (thing,
// seq). Seals left by v1 are harmless to v2 and still read.
//
// # Disk cap and TTL
//
// The logical size of the stored records is capped ([Config.MaxBytes]), and
// the cap in force is lowered at every commit to what the disk can hold
// ([Budget]; docs/disk-budget.md): the stored bytes plus half of what the
// file can still grow into (its free pages, the blocks reserved for it with
// fallocate, the file system's free space from statfs, minus
// [Config.DiskHeadroom]). A commit that hits ENOSPC all the same frees a
// ballast file of DiskHeadroom bytes kept beside the outbox file and is
// retried once after a transaction that drops the oldest telemetry; until
// the ballast is back, the file system's free space is taken as zero.
// Telemetry may use the cap minus [Config.EventReserve] (scaled down with
// the cap); when it would exceed that, or the whole file would exceed the
// cap, the oldest telemetry is dropped and a bowl.telemetry_dropped event
// naming the dropped seq range is written in the same transaction. Events are never dropped for space: when
// only events are left, Append fails with [ErrFull] and the caller must not
// acknowledge its source. Each lane has a TTL; expired telemetry is reported
// the same way, expired events are counted and logged. A record's age is
// measured on the outbox's age clock (the time the file has been open,
// advanced by a monotonic clock and stored in the file), never by its wall
// time, so a clock step cannot expire a backlog (docs/clock.md).
//
// # Record format
//
// Values start with a format byte: 2 since the age clock (the age at
// append follows the wall time), [FormatV1] before it; both decode. The meta
// bucket records the file format, still [FormatV1]; a file written by a
// newer agent is refused with [ErrFormat]. An agent older than the age clock
// cannot read format 2 values: downgrading needs an empty outbox.
//
// # Caveats: corruption and recovery
//
// [Open] runs bbolt's consistency check and refuses a damaged file with
// [ErrCorrupt]; it never starts empty in its place. The documented recovery
// path is [Recover] (bowline-edge run --recover): the damaged file is moved
// aside to <path>.corrupt-<unix seconds>, every record that can still be read
// is copied into a fresh file, and the agent starts on that. A zero-length
// file counts as new: bbolt initialises a file before the first transaction,
// so no record was ever acknowledged from it.
//
// bbolt never shrinks its file. [Outbox.Compact] rewrites it when most of it
// is free; Open does so on start when [Config.CompactFreeRatio] is exceeded,
// unless the copy would not fit on the file system.
package outbox
