package outbox

import (
	bolt "go.etcd.io/bbolt"
)

// fileOverhead is how many bytes of file a byte of record may take: bbolt
// writes every changed page to a new page before it frees the old one
// (copy on write), pages are not all full, and branch pages and the
// freelist come on top. TestFullDiskDropsOldestTelemetryAndKeepsEvents
// ends at about 1.1; 2 leaves a margin.
const fileOverhead = 2

// Budget is the space the outbox may use at one commit: the logical cap
// (Config.MaxBytes) lowered to what the file system can still hold
// (docs/disk-budget.md).
type Budget struct {
	// FileBytes is the bbolt file's used size (its high-water mark);
	// FileFreeBytes the free pages inside it, reused before it grows.
	FileBytes     int64 `json:"file_bytes"`
	FileFreeBytes int64 `json:"file_free_bytes"`
	// FSFreeBytes is the space available on the file system that holds
	// the file (statfs: blocks available to unprivileged users); -1 when
	// it cannot be read.
	FSFreeBytes int64 `json:"fs_free_bytes"`
	// ReservedBytes is disk space allocated to the file beyond its used
	// size (fallocate), up to DiskHeadroom: what the next commits can
	// write however full the file system gets.
	ReservedBytes int64 `json:"reserved_bytes"`
	// EffectiveMaxBytes is the cap in force: the stored records' logical
	// size plus what the file can still grow into (file free pages,
	// reserved bytes and file system space, minus Config.DiskHeadroom,
	// over fileOverhead), and never above MaxBytes.
	EffectiveMaxBytes int64 `json:"effective_max_bytes"`
	// DiskLimited reports that the disk, not MaxBytes, sets the cap.
	DiskLimited bool `json:"disk_limited"`
}

// budget computes the Budget under tx, a read or write transaction.
func (o *Outbox) budget(tx *bolt.Tx) Budget {
	w := &wtx{tx: tx, o: o}
	used := w.stat(bytesStat(Events)) + w.stat(bytesStat(Telemetry))
	st := tx.DB().Stats()
	b := Budget{
		FileBytes:     tx.Size(),
		FileFreeBytes: int64(st.FreePageN+st.PendingPageN) * int64(tx.DB().Info().PageSize),
		FSFreeBytes:   fsFree(o.cfg.Path),
	}
	b.ReservedBytes = max(0, o.reservedEnd.Load()-b.FileBytes)
	b.EffectiveMaxBytes = o.cfg.MaxBytes
	if b.FSFreeBytes >= 0 {
		room := max(0, b.FileFreeBytes+b.ReservedBytes+b.FSFreeBytes-o.cfg.DiskHeadroom)
		if fit := used + room/fileOverhead; fit < o.cfg.MaxBytes {
			b.EffectiveMaxBytes, b.DiskLimited = fit, true
		}
	}
	return b
}

// caps returns the effective cap and telemetry's part of it: the event
// reserve shrinks with the cap, in the proportion configured.
func (b Budget) caps(cfg Config) (total, telemetry int64) {
	total = b.EffectiveMaxBytes
	reserve := cfg.EventReserve
	if total < cfg.MaxBytes && cfg.MaxBytes > 0 {
		reserve = int64(float64(cfg.EventReserve) * float64(total) / float64(cfg.MaxBytes))
	}
	return total, total - reserve
}

// reserve allocates disk blocks to the file from its used size up to
// DiskHeadroom beyond it, without changing its size, when less than half
// of that is left. bbolt grows its file with ftruncate, which allocates
// nothing, so without this the blocks are claimed only when pages are
// written, and a disk filled meanwhile by anyone fails the commit. With it
// a commit, and the drops that make room, have the headroom to write into.
// It runs in the writer only; a file system without fallocate, or a full
// one, leaves the reserve as it is.
func (o *Outbox) reserve() {
	var used int64
	if err := o.db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil }); err != nil {
		return
	}
	end := o.reservedEnd.Load()
	if end-used >= o.cfg.DiskHeadroom/2 {
		return
	}
	want := used + o.cfg.DiskHeadroom
	if err := preallocate(o.cfg.Path, used, want-used); err != nil {
		o.log.Debug("outbox disk reserve not allocated", "path", o.cfg.Path, "bytes", want-used, "err", err)
		return
	}
	o.reservedEnd.Store(want)
}
