package outbox

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Things lists the things with records pending in lane, sorted by name.
func (o *Outbox) Things(lane Lane) ([]string, error) {
	var out []string
	err := o.view(func(tx *bolt.Tx) error {
		lb := tx.Bucket(laneBucket(lane))
		return lb.ForEachBucket(func(name []byte) error {
			if k, _ := lb.Bucket(name).Cursor().First(); k != nil {
				out = append(out, string(name))
			}
			return nil
		})
	})
	return out, err
}

// Events returns up to max pending events of thing with seq >= from, in
// seq order.
func (o *Outbox) Events(ctx context.Context, thing string, from uint64, max int) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Record
	err := o.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(laneBucket(Events)).Bucket([]byte(thing))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(seqKey(from)); k != nil && len(out) < max; k, v = c.Next() {
			e, err := decodeValue(v)
			if err != nil {
				return err
			}
			out = append(out, Record{Entry: e, Seq: keySeq(k)})
		}
		return nil
	})
	for i := range out {
		out[i].Lane, out[i].Thing = Events, thing
	}
	return out, err
}

// Batch is a sealed run of one thing's telemetry: seqs First..Last, sent as
// one message with seq First.
type Batch struct {
	Thing   string
	First   uint64
	Last    uint64
	Samples []Record
}

// BatchLimit bounds a new telemetry batch.
type BatchLimit struct {
	MaxSamples int
	// MaxBytes bounds the sum of Cost over the samples (0: no bound).
	MaxBytes int
	// Cost is a sample's share of the message size.
	Cost func(Record) int
}

// TelemetryBatch returns thing's first telemetry batch at or after seq
// from. A batch sealed earlier is returned as it was sealed; otherwise a new
// one is cut from the pending samples within lim and sealed durably before
// it is returned. ok is false when nothing is pending.
func (o *Outbox) TelemetryBatch(ctx context.Context, thing string, from uint64, lim BatchLimit) (Batch, bool, error) {
	var bt Batch
	var sealed, ok bool
	err := o.view(func(tx *bolt.Tx) error {
		var err error
		bt, ok, sealed, err = readBatch(tx, thing, from, lim, false)
		return err
	})
	if err != nil || !ok || sealed {
		return bt, ok, err
	}
	// The writer fills these; when do returns early (ctx ended) it may
	// still be running fn, so they are read only after a nil error.
	var sealedBt Batch
	var sealedOK bool
	err = o.do(ctx, 0, func(w *wtx) error {
		var err error
		sealedBt, sealedOK, _, err = readBatch(w.tx, thing, from, lim, true)
		return err
	})
	if err != nil {
		return Batch{}, false, err
	}
	return sealedBt, sealedOK, nil
}

func readBatch(tx *bolt.Tx, thing string, from uint64, lim BatchLimit, seal bool) (bt Batch, ok, sealed bool, err error) {
	b := tx.Bucket(laneBucket(Telemetry)).Bucket([]byte(thing))
	if b == nil {
		return bt, false, false, nil
	}
	sb := tx.Bucket(bucketSeals).Bucket([]byte(thing))
	c := b.Cursor()
	k, v := c.Seek(seqKey(from))
	if k == nil {
		return bt, false, false, nil
	}
	bt.Thing, bt.First = thing, keySeq(k)
	last := uint64(0)
	if sb != nil {
		if s := sb.Get(k); len(s) == 8 {
			sealed, last = true, keySeq(s)
		}
	}
	size := 0
	for ; k != nil; k, v = c.Next() {
		seq := keySeq(k)
		if sealed && seq > last {
			break
		}
		if !sealed {
			if len(bt.Samples) >= lim.MaxSamples {
				break
			}
			if len(bt.Samples) > 0 && seq != bt.Samples[len(bt.Samples)-1].Seq+1 {
				break // a gap: never seal across it
			}
			if sb != nil && sb.Get(k) != nil && len(bt.Samples) > 0 {
				break
			}
		}
		e, derr := decodeValue(v)
		if derr != nil {
			return bt, false, false, derr
		}
		e.Lane, e.Thing = Telemetry, thing
		r := Record{Entry: e, Seq: seq}
		if !sealed && lim.MaxBytes > 0 && lim.Cost != nil {
			cost := lim.Cost(r)
			if len(bt.Samples) > 0 && size+cost > lim.MaxBytes {
				break
			}
			size += cost
		}
		bt.Samples = append(bt.Samples, r)
	}
	if len(bt.Samples) == 0 {
		return bt, false, sealed, nil
	}
	bt.Last = bt.Samples[len(bt.Samples)-1].Seq
	if !sealed && seal {
		sb, err := tx.Bucket(bucketSeals).CreateBucketIfNotExists([]byte(thing))
		if err != nil {
			return bt, false, false, err
		}
		if err := sb.Put(seqKey(bt.First), seqKey(bt.Last)); err != nil {
			return bt, false, false, err
		}
		sealed = true
	}
	return bt, true, sealed, nil
}

// LaneStats describes one lane.
type LaneStats struct {
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// Oldest is the time of the oldest pending record (zero when empty).
	Oldest time.Time `json:"oldest,omitzero"`
	// Dropped counts records removed unsent since the file was created
	// (telemetry: disk cap and TTL; events: TTL).
	Dropped int64 `json:"dropped"`
}

// Stats describes the outbox.
type Stats struct {
	Events    LaneStats `json:"events"`
	Telemetry LaneStats `json:"telemetry"`
	// FileBytes is the size of the bbolt file; FreeBytes how much of it is
	// free pages.
	FileBytes int64 `json:"file_bytes"`
	FreeBytes int64 `json:"free_bytes"`
	MaxBytes  int64 `json:"max_bytes"`
	// Budget is the disk budget now: the file system's free space and the
	// cap in force (EffectiveMaxBytes, at most MaxBytes).
	Budget Budget `json:"budget"`
}

// Lane returns the stats of lane l.
func (s Stats) Lane(l Lane) LaneStats {
	if l == Events {
		return s.Events
	}
	return s.Telemetry
}

// Stats reads the counters and the oldest pending record of each lane.
func (o *Outbox) Stats() (Stats, error) {
	var s Stats
	s.MaxBytes = o.cfg.MaxBytes
	pageSize := 0
	err := o.view(func(tx *bolt.Tx) error {
		w := &wtx{tx: tx, o: o}
		for _, l := range Lanes {
			ls := LaneStats{Records: w.stat(countStat(l)), Bytes: w.stat(bytesStat(l)), Dropped: w.stat(droppedStat(l))}
			lb := tx.Bucket(laneBucket(l))
			_ = lb.ForEachBucket(func(name []byte) error {
				if k, v := lb.Bucket(name).Cursor().First(); k != nil {
					if e, err := decodeValue(v); err == nil && (ls.Oldest.IsZero() || e.At.Before(ls.Oldest)) {
						ls.Oldest = e.At
					}
				}
				return nil
			})
			if l == Events {
				s.Events = ls
			} else {
				s.Telemetry = ls
			}
		}
		s.FileBytes = tx.Size()
		s.Budget = o.budget(tx)
		// Info reads the mmap, which a commit may remap: only under a read
		// transaction (which holds bbolt's mmap lock) is that safe.
		pageSize = tx.DB().Info().PageSize
		return nil
	})
	o.mu.RLock()
	st := o.db.Stats()
	o.mu.RUnlock()
	s.FreeBytes = int64(st.FreePageN+st.PendingPageN) * int64(pageSize)
	return s, err
}
