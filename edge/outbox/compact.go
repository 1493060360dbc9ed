package outbox

import (
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// Compact rewrites the file without its free pages when more than
// CompactFreeRatio of it is free (bbolt never shrinks a file). Writes wait
// while it runs. It reports whether it compacted.
func (o *Outbox) Compact() (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.compactLocked()
}

func (o *Outbox) compactIfSparse() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, err := o.compactLocked()
	return err
}

func (o *Outbox) compactLocked() (bool, error) {
	fi, err := os.Stat(o.cfg.Path)
	if err != nil {
		return false, fmt.Errorf("compact outbox %s: %w", o.cfg.Path, err)
	}
	st := o.db.Stats()
	free := int64(st.FreePageN+st.PendingPageN) * int64(o.db.Info().PageSize)
	if fi.Size() < o.cfg.CompactMinBytes || float64(free) <= o.cfg.CompactFreeRatio*float64(fi.Size()) {
		return false, nil
	}
	// The copy needs the live part of the file again on the same disk; on
	// a full disk it would fail, and Open with it.
	if avail, live := freeSpace(o.cfg.Path), fi.Size()-free; avail >= 0 && avail < live+o.cfg.DiskHeadroom {
		o.log.Warn("outbox not compacted: the copy would not fit on the disk", "path", o.cfg.Path, "live_bytes", live, "fs_free_bytes", avail)
		return false, nil
	}
	tmp := o.cfg.Path + ".compact"
	_ = os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType})
	if err != nil {
		return false, fmt.Errorf("compact outbox %s: open %s: %w", o.cfg.Path, tmp, err)
	}
	if err := bolt.Compact(dst, o.db, 64<<20); err != nil {
		_ = dst.Close()
		_ = os.Remove(tmp)
		return false, fmt.Errorf("compact outbox %s: %w", o.cfg.Path, err)
	}
	if err := dst.Sync(); err != nil {
		_ = dst.Close()
		return false, fmt.Errorf("compact outbox %s: sync: %w", o.cfg.Path, err)
	}
	if err := dst.Close(); err != nil {
		return false, fmt.Errorf("compact outbox %s: %w", o.cfg.Path, err)
	}
	if err := o.db.Close(); err != nil {
		return false, fmt.Errorf("compact outbox %s: close: %w", o.cfg.Path, err)
	}
	// rename is atomic: a crash leaves either the old or the new file.
	if err := os.Rename(tmp, o.cfg.Path); err != nil {
		return false, fmt.Errorf("compact outbox %s: rename: %w", o.cfg.Path, err)
	}
	if err := syncDir(o.cfg.Path); err != nil {
		return false, err
	}
	db, err := bolt.Open(o.cfg.Path, 0o600, &bolt.Options{NoSync: o.cfg.NoSync, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return false, fmt.Errorf("compact outbox %s: reopen: %w", o.cfg.Path, err)
	}
	o.db = db
	o.reservedEnd.Store(0) // a new file: reserve again
	nfi, _ := os.Stat(o.cfg.Path)
	var after int64
	if nfi != nil {
		after = nfi.Size()
	}
	o.log.Info("compacted outbox", "path", o.cfg.Path, "before_bytes", fi.Size(), "after_bytes", after)
	return true, nil
}

func syncDir(path string) error {
	d, err := os.Open(dirOf(path))
	if err != nil {
		return fmt.Errorf("sync dir of %s: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir of %s: %w", path, err)
	}
	return nil
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			if i == 0 {
				return "/"
			}
			return path[:i]
		}
	}
	return "."
}
