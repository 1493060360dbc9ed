package outbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

func (o *Outbox) startWriter() {
	o.ops = make(chan *op, o.cfg.MaxBatch)
	o.stop = make(chan struct{})
	o.stopped = make(chan struct{})
	go o.writer()
}

// writer is the group commit loop: it takes every queued operation (up to
// MaxBatch), runs them in one read-write transaction and commits once.
//
// An operation's fn must not write anything when it returns an error (it
// checks before it writes), so one failing operation does not spoil the
// others; a failed commit fails them all.
func (o *Outbox) writer() {
	defer close(o.stopped)
	batch := make([]*op, 0, o.cfg.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case <-o.stop:
			o.failQueued()
			return
		case first := <-o.ops:
			batch = append(batch, first)
		}
	drain:
		for len(batch) < o.cfg.MaxBatch {
			select {
			case next := <-o.ops:
				batch = append(batch, next)
			default:
				break drain
			}
		}
		o.commit(batch)
	}
}

func (o *Outbox) failQueued() {
	for {
		select {
		case p := <-o.ops:
			p.done <- ErrClosed
		default:
			return
		}
	}
}

func (o *Outbox) commit(batch []*op) {
	start := time.Now()
	o.mu.RLock()
	errs, drops, added, entries, err := o.commitOnce(batch)
	if errors.Is(err, syscall.ENOSPC) {
		// The budget was not enough: the disk filled faster than it
		// predicted (another writer on it, a commit larger than the
		// headroom, a file system that overstates its free space). Free
		// the ballast so the squeeze has blocks to write its pages into,
		// make room in a transaction of its own, whose pages the retry
		// can reuse, then retry once.
		o.releaseBallast()
		if serr := o.squeeze(); serr != nil {
			o.log.Error("outbox commit failed: no space left on the disk, and dropping telemetry to make room failed too", "path", o.cfg.Path, "err", serr)
		} else {
			errs, drops, added, entries, err = o.commitOnce(batch)
		}
	}
	if err == nil {
		o.reserve()
		o.keepBallast()
	}
	o.mu.RUnlock()
	if err == nil {
		o.noteDrops(drops)
		o.cfg.Observer.Committed(len(batch), entries, time.Since(start))
	}
	for i, p := range batch {
		if err != nil {
			p.done <- fmt.Errorf("outbox commit: %w", err)
			continue
		}
		p.done <- errs[i]
	}
	if err == nil && added {
		o.signal()
	}
}

// commitOnce runs batch in one transaction. An operation can run more
// than once (after a failed commit, which rolled back), so it must act on
// the transaction only; drops are returned, to be reported once the
// transaction has committed.
func (o *Outbox) commitOnce(batch []*op) (errs []error, drops []dropNote, added bool, entries int, err error) {
	age := o.age()
	err = o.db.Update(func(tx *bolt.Tx) error {
		errs, drops, added, entries = make([]error, len(batch)), nil, false, 0
		budget := o.budget(tx)
		for i, p := range batch {
			w := &wtx{tx: tx, o: o, age: age, budget: budget}
			errs[i] = p.fn(w)
			if errs[i] == nil {
				added = added || w.added
				entries += p.entries
				drops = append(drops, w.drops...)
			}
		}
		return tx.Bucket(bucketMeta).Put(keyAge, binary.BigEndian.AppendUint64(nil, uint64(age)))
	})
	return errs, drops, added, entries, err
}

// squeeze drops the oldest eighth of the stored records' logical size
// (at least DiskHeadroom), oldest telemetry first, and reports it, in a
// transaction that writes little else.
func (o *Outbox) squeeze() error {
	var drops []dropNote
	err := o.db.Update(func(tx *bolt.Tx) error {
		w := &wtx{tx: tx, o: o, age: o.age()}
		w.budget = o.budget(tx)
		used := w.stat(bytesStat(Events)) + w.stat(bytesStat(Telemetry))
		w.budget.EffectiveMaxBytes = max(0, min(w.budget.EffectiveMaxBytes, used)-max(used/8, o.cfg.DiskHeadroom))
		w.budget.DiskLimited = true
		if err := w.enforceCap(); err != nil {
			return err
		}
		drops = w.drops
		return nil
	})
	if err == nil {
		o.log.Warn("no space left on the disk: dropped the oldest telemetry to make room", "path", o.cfg.Path)
		o.noteDrops(drops)
	}
	return err
}

// dropNote is one run of records dropped or expired, for Observer.Dropped.
type dropNote struct {
	lane   Lane
	thing  string
	count  int
	reason string
}

func (o *Outbox) noteDrops(drops []dropNote) {
	for _, d := range drops {
		o.cfg.Observer.Dropped(d.lane, d.thing, d.count, d.reason)
	}
}

// do queues fn for the next group commit and waits for its outcome. Once
// queued, the operation completes even if ctx ends; do then returns the
// context's error but the write may still have happened.
func (o *Outbox) do(ctx context.Context, entries int, fn func(w *wtx) error) error {
	p := &op{fn: fn, entries: entries, done: make(chan error, 1)}
	select {
	case <-o.stop:
		return ErrClosed
	default:
	}
	select {
	case o.ops <- p:
	case <-o.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Append makes entries durable, assigning each its lane sequence, and puts
// the state pairs (the caller's own bookkeeping, e.g. dedup watermarks and
// detector state) in the same transaction. It returns after the fsync.
// All or nothing: on ErrFull nothing was written.
func (o *Outbox) Append(ctx context.Context, entries []Entry, state map[string][]byte) error {
	for i, e := range entries {
		if err := e.validate(); err != nil {
			return fmt.Errorf("append entry %d: %w", i, err)
		}
	}
	return o.do(ctx, len(entries), func(w *wtx) error { return w.append(entries, state) })
}

// Ack removes the records first..last of thing's lane after their PUBACK.
// Records already gone (acked twice, or dropped) are ignored. A telemetry
// seal starting at first is removed with them.
func (o *Outbox) Ack(ctx context.Context, lane Lane, thing string, first, last uint64) error {
	return o.do(ctx, 0, func(w *wtx) error { return w.ack(lane, thing, first, last) })
}

// State returns the value stored under key by Append, or nil.
func (o *Outbox) State(key string) ([]byte, error) {
	var v []byte
	err := o.view(func(tx *bolt.Tx) error {
		if got := tx.Bucket(bucketState).Get([]byte(key)); got != nil {
			v = append([]byte(nil), got...)
		}
		return nil
	})
	return v, err
}

// wtx is one operation's view of the shared write transaction.
type wtx struct {
	tx    *bolt.Tx
	o     *Outbox
	added bool
	age   time.Duration // the age clock at the start of the transaction
	// budget is the space at the start of the transaction: its
	// EffectiveMaxBytes is the cap Append and the drops enforce.
	budget Budget
	drops  []dropNote // reported once the transaction commits
}

func nextKey(l Lane, thing string) []byte { return append([]byte{byte(l)}, thing...) }

func (w *wtx) peekNext(l Lane, thing string) uint64 {
	if v := w.tx.Bucket(bucketNext).Get(nextKey(l, thing)); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 1
}

func (w *wtx) setNext(l Lane, thing string, seq uint64) error {
	return w.tx.Bucket(bucketNext).Put(nextKey(l, thing), seqKey(seq))
}

func (w *wtx) stat(name string) int64 {
	if v := w.tx.Bucket(bucketStats).Get([]byte(name)); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (w *wtx) addStat(name string, d int64) error {
	if d == 0 {
		return nil
	}
	return w.tx.Bucket(bucketStats).Put([]byte(name), binary.BigEndian.AppendUint64(nil, uint64(w.stat(name)+d)))
}

func bytesStat(l Lane) string   { return "bytes-" + l.String() }
func countStat(l Lane) string   { return "count-" + l.String() }
func droppedStat(l Lane) string { return "dropped-" + l.String() }

func (w *wtx) thingBucket(l Lane, thing string, create bool) (*bolt.Bucket, error) {
	lb := w.tx.Bucket(laneBucket(l))
	if create {
		return lb.CreateBucketIfNotExists([]byte(thing))
	}
	return lb.Bucket([]byte(thing)), nil
}

type laneThing struct {
	lane  Lane
	thing string
}

func (w *wtx) append(entries []Entry, state map[string][]byte) error {
	var newCost [3]int64
	vals := make([][]byte, len(entries))
	for i, e := range entries {
		vals[i] = encodeValueAt(e, w.age)
		newCost[e.Lane] += recordCost(len(vals[i]))
	}
	evBytes := w.stat(bytesStat(Events))
	if maxBytes, _ := w.budget.caps(w.o.cfg); evBytes+newCost[Events] > maxBytes {
		return fmt.Errorf("append %d events (%d bytes) to %d of %d bytes (max_bytes %d, file system free %d): %w",
			len(entries), newCost[Events], evBytes, maxBytes, w.o.cfg.MaxBytes, w.budget.FSFreeBytes, ErrFull)
	}
	// Checks passed: from here on, write.
	next := map[laneThing]uint64{}
	buckets := map[laneThing]*bolt.Bucket{}
	var count [3]int64
	for i, e := range entries {
		lt := laneThing{e.Lane, e.Thing}
		b, ok := buckets[lt]
		if !ok {
			var err error
			if b, err = w.thingBucket(e.Lane, e.Thing, true); err != nil {
				return err
			}
			buckets[lt] = b
			b.FillPercent = 1 // keys only ever grow: pack pages full
			next[lt] = w.peekNext(e.Lane, e.Thing)
		}
		seq := next[lt]
		if err := b.Put(seqKey(seq), vals[i]); err != nil {
			return err
		}
		next[lt] = seq + 1
		count[e.Lane]++
	}
	for lt, n := range next {
		if err := w.setNext(lt.lane, lt.thing, n); err != nil {
			return err
		}
	}
	for _, l := range Lanes {
		if err := w.addStat(bytesStat(l), newCost[l]); err != nil {
			return err
		}
		if err := w.addStat(countStat(l), count[l]); err != nil {
			return err
		}
	}
	for k, v := range state {
		if err := w.tx.Bucket(bucketState).Put([]byte(k), v); err != nil {
			return err
		}
	}
	w.added = len(entries) > 0
	return w.enforceCap()
}

// appendEvent writes one event inside the transaction (drop reports).
func (w *wtx) appendEvent(e Entry) error {
	b, err := w.thingBucket(Events, e.Thing, true)
	if err != nil {
		return err
	}
	seq := w.peekNext(Events, e.Thing)
	v := encodeValueAt(e, w.age)
	if err := b.Put(seqKey(seq), v); err != nil {
		return err
	}
	if err := w.setNext(Events, e.Thing, seq+1); err != nil {
		return err
	}
	if err := w.addStat(bytesStat(Events), recordCost(len(v))); err != nil {
		return err
	}
	w.added = true
	return w.addStat(countStat(Events), 1)
}

// remove deletes key seq of b, accounting for it; it reports whether the
// record existed and its entry.
func (w *wtx) remove(l Lane, b *bolt.Bucket, seq uint64) (Entry, bool, error) {
	k := seqKey(seq)
	v := b.Get(k)
	if v == nil {
		return Entry{}, false, nil
	}
	e, derr := decodeValue(v)
	cost := recordCost(len(v))
	if err := b.Delete(k); err != nil {
		return Entry{}, false, err
	}
	if err := w.addStat(bytesStat(l), -cost); err != nil {
		return Entry{}, false, err
	}
	if err := w.addStat(countStat(l), -1); err != nil {
		return Entry{}, false, err
	}
	if derr != nil {
		w.o.log.Warn("removed undecodable record", "lane", l, "seq", seq, "err", derr)
	}
	return e, true, nil
}

func (w *wtx) ack(l Lane, thing string, first, last uint64) error {
	b, err := w.thingBucket(l, thing, false)
	if err != nil || b == nil {
		return err
	}
	c := b.Cursor()
	var seqs []uint64
	for k, _ := c.Seek(seqKey(first)); k != nil && keySeq(k) <= last; k, _ = c.Next() {
		seqs = append(seqs, keySeq(k))
	}
	for _, s := range seqs {
		if _, _, err := w.remove(l, b, s); err != nil {
			return err
		}
	}
	if l == Telemetry {
		if sb := w.tx.Bucket(bucketSeals).Bucket([]byte(thing)); sb != nil {
			if err := sb.Delete(seqKey(first)); err != nil {
				return err
			}
		}
	}
	return nil
}
