package outbox

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Salvage reports what Recover did.
type Salvage struct {
	// MovedTo is where the damaged file now lives.
	MovedTo string `json:"moved_to"`
	// Copied counts the key/value pairs copied into the new file; Lost the
	// buckets or pages that could not be read.
	Copied int      `json:"copied"`
	Lost   []string `json:"lost,omitempty"`
}

// Recover is the documented way out of ErrCorrupt: it moves the file at
// path aside to <path>.corrupt-<unix seconds>, copies every bucket and key
// that can still be read into a fresh file at path, and reports what it did.
// The damaged file is kept for inspection. Call Open afterwards.
//
// A power cut in the middle of a commit needs no recovery: bbolt falls
// back to the other meta page when the newest one is torn, and the torn
// transaction was never acknowledged. Recover is for damage found later
// (a bad sector, a disk that ignored a flush); with the newest meta page
// corrupt it keeps every record up to the transaction before.
// docs/power-cut.md shows both with the power-cut harness.
func Recover(path string, logger *slog.Logger) (Salvage, error) {
	if logger == nil {
		logger = slog.Default()
	}
	var s Salvage
	s.MovedTo = fmt.Sprintf("%s.corrupt-%d", path, time.Now().Unix())
	if err := os.Rename(path, s.MovedTo); err != nil {
		return s, fmt.Errorf("recover outbox %s: move aside: %w", path, err)
	}
	dst, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return s, fmt.Errorf("recover outbox %s: create: %w", path, err)
	}
	defer dst.Close()
	src, err := openReadOnly(s.MovedTo)
	if err != nil {
		s.Lost = append(s.Lost, "whole file: "+err.Error())
		logger.Error("outbox unreadable; starting a new file, everything in the old one is lost", "path", path, "moved_to", s.MovedTo, "err", err)
		if err := dst.Update(initBuckets); err != nil {
			return s, fmt.Errorf("recover outbox %s: %w", path, err)
		}
		return s, syncDir(path)
	}
	defer src.Close()
	err = dst.Update(func(dtx *bolt.Tx) error {
		return src.View(func(stx *bolt.Tx) error {
			return stx.ForEach(func(name []byte, b *bolt.Bucket) error {
				copyBucket(&s, string(name), b, func() (*bolt.Bucket, error) { return dtx.CreateBucketIfNotExists(name) })
				return nil
			})
		})
	})
	if err != nil {
		return s, fmt.Errorf("recover outbox %s: copy: %w", path, err)
	}
	if err := dst.Update(initBuckets); err != nil {
		return s, fmt.Errorf("recover outbox %s: %w", path, err)
	}
	// The stats are rebuilt from what survived.
	if err := dst.Update(rebuildStats); err != nil {
		return s, fmt.Errorf("recover outbox %s: rebuild stats: %w", path, err)
	}
	// The move aside and the new file are directory entries: without a
	// directory fsync a power cut could bring the damaged file back and
	// drop the new one with every record appended after the recovery.
	if err := syncDir(path); err != nil {
		return s, fmt.Errorf("recover outbox %s: %w", path, err)
	}
	logger.Warn("recovered outbox", "path", path, "moved_to", s.MovedTo, "copied", s.Copied, "lost", s.Lost)
	return s, nil
}

func openReadOnly(path string) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("open: %v", r)
		}
	}()
	return bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: time.Second})
}

func copyBucket(s *Salvage, name string, src *bolt.Bucket, dst func() (*bolt.Bucket, error)) {
	defer func() {
		if r := recover(); r != nil {
			s.Lost = append(s.Lost, fmt.Sprintf("bucket %s: %v", name, r))
		}
	}()
	d, err := dst()
	if err != nil {
		s.Lost = append(s.Lost, fmt.Sprintf("bucket %s: %v", name, err))
		return
	}
	_ = src.ForEach(func(k, v []byte) error {
		if v == nil {
			sub := src.Bucket(k)
			copyBucket(s, name+"/"+string(k), sub, func() (*bolt.Bucket, error) { return d.CreateBucketIfNotExists(k) })
			return nil
		}
		if err := d.Put(append([]byte(nil), k...), append([]byte(nil), v...)); err != nil {
			s.Lost = append(s.Lost, fmt.Sprintf("bucket %s key %x: %v", name, k, err))
			return nil
		}
		s.Copied++
		return nil
	})
}

func rebuildStats(tx *bolt.Tx) error {
	st := tx.Bucket(bucketStats)
	for _, l := range Lanes {
		var n, size int64
		lb := tx.Bucket(laneBucket(l))
		_ = lb.ForEachBucket(func(name []byte) error {
			// The next seq never goes back: a reused seq would be
			// dropped by the cloud as a duplicate.
			if k, _ := lb.Bucket(name).Cursor().Last(); k != nil {
				nk := nextKey(l, string(name))
				if v := tx.Bucket(bucketNext).Get(nk); len(v) != 8 || keySeq(v) <= keySeq(k) {
					if err := tx.Bucket(bucketNext).Put(nk, seqKey(keySeq(k)+1)); err != nil {
						return err
					}
				}
			}
			return lb.Bucket(name).ForEach(func(k, v []byte) error {
				n++
				size += recordCost(len(v))
				return nil
			})
		})
		if err := st.Put([]byte(countStat(l)), seqKey(uint64(n))); err != nil {
			return err
		}
		if err := st.Put([]byte(bytesStat(l)), seqKey(uint64(size))); err != nil {
			return err
		}
	}
	return nil
}
