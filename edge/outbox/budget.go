package outbox

import (
	"errors"
	"os"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// fileOverhead is how many bytes of file a byte of record may take: bbolt
// writes every changed page to a new page before it frees the old one
// (copy on write), pages are not all full, and branch pages and the
// freelist come on top. TestFullDiskDropsOldestTelemetryAndKeepsEvents
// ends at about 1.1; 2 leaves a margin.
const fileOverhead = 2

// freeSpace reads the file system's free space (fsFree); a test replaces
// it to play a file system that overstates its free space, so that a
// commit meets ENOSPC the budget did not foresee.
var freeSpace = fsFree

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
	// BallastBytes is the size of the ballast file beside the outbox
	// file: space set aside that only a commit that met ENOSPC frees,
	// so that dropping telemetry has blocks to write into. It counts as
	// room (it is the headroom, held).
	BallastBytes int64 `json:"ballast_bytes"`
	// OutOfSpace reports that the file system ran out of space while it
	// reported room (a commit met ENOSPC, or the ballast could not be
	// allocated), and the ballast is not back: its free space is then
	// taken as zero, so the cap keeps the file within its own free pages
	// and reserve.
	OutOfSpace bool `json:"out_of_space"`
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
		FSFreeBytes:   freeSpace(o.cfg.Path),
	}
	b.ReservedBytes = max(0, o.reservedEnd.Load()-b.FileBytes)
	if o.ballast.Load() {
		b.BallastBytes = o.cfg.DiskHeadroom
	}
	b.OutOfSpace = o.outOfSpace.Load()
	b.EffectiveMaxBytes = o.cfg.MaxBytes
	if fs := b.FSFreeBytes; fs >= 0 || b.OutOfSpace {
		if b.OutOfSpace {
			fs = 0
		}
		room := max(0, b.FileFreeBytes+b.ReservedBytes+fs+b.BallastBytes-o.cfg.DiskHeadroom)
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

// ballastPath is the ballast file's path, beside the outbox file.
func (o *Outbox) ballastPath() string { return o.cfg.Path + ".ballast" }

// keepBallast makes sure the ballast file holds DiskHeadroom bytes of the
// file system. The outbox's own reserve (reserve) is space the file grows
// into, so ordinary commits use it up; on a file system that reports more
// free space than it has, a commit then meets ENOSPC with nothing left for
// the transaction that drops telemetry to make room, which must write
// pages too. The ballast is that space: only the ENOSPC path frees it
// (releaseBallast). While it cannot be made again for lack of space, the
// budget does not believe the file system's free space (outOfSpace). A
// file system without fallocate gets no ballast and keeps the estimate
// alone. It runs at Open and in the writer after each commit while the
// ballast is missing.
func (o *Outbox) keepBallast() {
	if o.ballast.Load() {
		return
	}
	path := o.ballastPath()
	if fi, err := os.Stat(path); err == nil && fi.Size() == o.cfg.DiskHeadroom {
		o.ballast.Store(true)
		o.outOfSpace.Store(false)
		return
	}
	err := allocateFile(path, o.cfg.DiskHeadroom)
	switch {
	case err == nil:
		o.ballast.Store(true)
		if o.outOfSpace.Swap(false) {
			o.log.Info("outbox ballast allocated again: the disk has room", "path", path)
		}
	case errors.Is(err, syscall.ENOSPC):
		o.outOfSpace.Store(true)
	default:
		o.log.Debug("outbox ballast not allocated", "path", path, "err", err)
	}
}

// releaseBallast frees the ballast's space for a commit that met ENOSPC;
// from then on, until the ballast is back, the file system's free space
// is not believed.
func (o *Outbox) releaseBallast() {
	o.outOfSpace.Store(true)
	if !o.ballast.Swap(false) {
		return
	}
	if err := os.Remove(o.ballastPath()); err != nil {
		o.log.Warn("outbox ballast not removed", "path", o.ballastPath(), "err", err)
	}
}
