package outbox

import (
	"path/filepath"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// fileOverhead is how many bytes of file a byte of record may take: bbolt
// writes every changed page to a new page before it frees the old one
// (copy on write), pages are not all full, and branch pages and the
// freelist come on top. Measured files stay under 1.5; 2 leaves a margin.
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
	// EffectiveMaxBytes is the cap in force: the stored records' logical
	// size plus what the file can still grow into (file free pages and
	// file system space minus Config.DiskHeadroom, over fileOverhead), and
	// never above MaxBytes.
	EffectiveMaxBytes int64 `json:"effective_max_bytes"`
	// DiskLimited reports that the disk, not MaxBytes, sets the cap.
	DiskLimited bool `json:"disk_limited"`
}

// fsFree returns the bytes available on the file system holding path, or
// -1 when statfs fails.
func fsFree(path string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
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
	b.EffectiveMaxBytes = o.cfg.MaxBytes
	if b.FSFreeBytes >= 0 {
		room := max(0, b.FileFreeBytes+b.FSFreeBytes-o.cfg.DiskHeadroom)
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
