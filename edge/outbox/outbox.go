package outbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var (
	bucketMeta  = []byte("meta")
	bucketSeals = []byte("seals")
	bucketNext  = []byte("next")
	bucketStats = []byte("stats")
	bucketState = []byte("state")
	keyFormat   = []byte("format")
	keyAge      = []byte("age") // the age clock, nanoseconds, big endian
)

func laneBucket(l Lane) []byte { return []byte("lane-" + l.String()) }

// Outbox is the durable two-lane buffer. It is safe for concurrent use.
type Outbox struct {
	cfg Config
	log *slog.Logger
	id  string // the instance id (meta "id"), fixed for the file's life

	mu sync.RWMutex // write-locked only while Compact swaps the file
	db *bolt.DB

	ops     chan *op
	stop    chan struct{}
	stopped chan struct{}

	notifyMu sync.Mutex
	notify   chan struct{}

	closeOnce sync.Once

	// reservedEnd is the end of the disk blocks reserve allocated to the
	// file (0: none yet, or the file was rewritten).
	reservedEnd atomic.Int64
	// ballast: the ballast file (ballastPath) holds DiskHeadroom bytes.
	// outOfSpace: a commit met ENOSPC, or the ballast could not be made
	// for lack of space, since the ballast was last in place; the file
	// system's free space is then not believed (Budget.OutOfSpace).
	ballast, outOfSpace atomic.Bool

	// The age clock (see Config.Elapsed): ageBase as stored in the file
	// at Open, plus the monotonic time since then.
	ageBase  time.Duration
	now0     time.Time
	elapsed0 time.Duration
}

// age reads the age clock: how long this outbox file has been open, over
// all its runs. It never goes backwards, whatever the wall clock does.
func (o *Outbox) age() time.Duration {
	var d time.Duration
	if o.cfg.Elapsed != nil {
		d = o.cfg.Elapsed() - o.elapsed0
	} else {
		d = o.cfg.Now().Sub(o.now0) // monotonic when both come from time.Now
	}
	return o.ageBase + max(0, d)
}

type op struct {
	fn      func(w *wtx) error
	entries int
	done    chan error
}

// Open opens or creates the outbox file, checks it and starts the writer.
// A damaged file yields ErrCorrupt (see Recover); a file held by another
// process yields ErrLocked.
func Open(cfg Config) (*Outbox, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	db, err := openChecked(cfg)
	if err != nil {
		return nil, err
	}
	o := &Outbox{cfg: cfg, log: cfg.Logger, db: db, notify: make(chan struct{}), now0: cfg.Now()}
	if cfg.Elapsed != nil {
		o.elapsed0 = cfg.Elapsed()
	}
	if err := db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if v := m.Get(keyAge); len(v) == 8 {
			o.ageBase = time.Duration(binary.BigEndian.Uint64(v))
		}
		o.id = string(m.Get(keyID))
		return nil
	}); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open outbox %s: read age clock: %w", cfg.Path, err)
	}
	if err := o.compactIfSparse(); err != nil {
		_ = o.db.Close()
		return nil, err
	}
	o.reserve()
	o.keepBallast()
	o.startWriter()
	return o, nil
}

func openChecked(cfg Config) (db *bolt.DB, err error) {
	created := false
	if fi, statErr := os.Stat(cfg.Path); statErr == nil && fi.Size() == 0 {
		cfg.Logger.Info("outbox file is empty; initialising it", "path", cfg.Path)
	} else if errors.Is(statErr, os.ErrNotExist) {
		cfg.Logger.Info("creating new outbox file", "path", cfg.Path)
		created = true
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("open outbox %s: %w: %v", cfg.Path, ErrCorrupt, r)
		}
	}()
	db, err = bolt.Open(cfg.Path, 0o600, &bolt.Options{Timeout: time.Second, NoSync: cfg.NoSync, FreelistType: bolt.FreelistMapType})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("open outbox %s: %w", cfg.Path, ErrLocked)
		}
		return nil, fmt.Errorf("open outbox %s: %w: %v", cfg.Path, ErrCorrupt, err)
	}
	// bbolt fsyncs the file, never its directory: without this a power cut
	// can take the new file's name, and every record in it, away
	// (docs/power-cut.md).
	if created && !cfg.NoSync {
		if err := syncDir(cfg.Path); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("open outbox %s: %w", cfg.Path, err)
		}
	}
	if err := check(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open outbox %s: %w", cfg.Path, err)
	}
	if err := db.Update(initBuckets); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open outbox %s: %w", cfg.Path, err)
	}
	return db, nil
}

// check runs bbolt's page-level consistency check and the format check.
func check(db *bolt.DB) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: consistency check panicked: %v", ErrCorrupt, r)
		}
	}()
	return db.View(func(tx *bolt.Tx) error {
		for cerr := range tx.Check() {
			if cerr != nil {
				return fmt.Errorf("%w: %v", ErrCorrupt, cerr)
			}
		}
		if m := tx.Bucket(bucketMeta); m != nil {
			if v := m.Get(keyFormat); len(v) != 1 || v[0] != FormatV1 {
				return fmt.Errorf("file format %v: %w", v, ErrFormat)
			}
		}
		return nil
	})
}

func initBuckets(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketMeta, bucketSeals, bucketNext, bucketStats, bucketState, laneBucket(Events), laneBucket(Telemetry)} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	m := tx.Bucket(bucketMeta)
	if m.Get(keyFormat) == nil {
		if err := m.Put(keyFormat, []byte{FormatV1}); err != nil {
			return err
		}
	}
	return ensureID(m)
}

// Close stops the writer (pending operations fail with ErrClosed) and
// closes the file.
func (o *Outbox) Close() error {
	var err error
	o.closeOnce.Do(func() {
		close(o.stop)
		<-o.stopped
		o.mu.Lock()
		defer o.mu.Unlock()
		err = o.db.Close()
	})
	return err
}

// Path returns the file's path.
func (o *Outbox) Path() string { return o.cfg.Path }

// Changed returns a channel closed at the next commit that adds records.
func (o *Outbox) Changed() <-chan struct{} {
	o.notifyMu.Lock()
	defer o.notifyMu.Unlock()
	return o.notify
}

func (o *Outbox) signal() {
	o.notifyMu.Lock()
	close(o.notify)
	o.notify = make(chan struct{})
	o.notifyMu.Unlock()
}

func (o *Outbox) view(fn func(tx *bolt.Tx) error) error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.db.View(fn)
}
