package outbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/bowline-iot/bowline/edge/wire"
)

// keyID is the meta key of the outbox instance id.
var keyID = []byte("id")

// newID returns a fresh outbox instance id: 16 random bytes in hex, 32
// characters, a wire.ValidName within wire.MaxOutboxIDLen.
func newID() []byte {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return []byte(hex.EncodeToString(b[:]))
}

// ensureID gives the file an instance id when it has none (a new file, or
// one written before ids existed).
func ensureID(m *bolt.Bucket) error {
	if v := m.Get(keyID); len(v) > 0 {
		return nil
	}
	return m.Put(keyID, newID())
}

// ID is the outbox instance id: created with the file, kept by Recover and
// Compact, and named in every telemetry batch and acknowledgement
// (docs/telemetry-path.md). An acknowledgement for another id is not for
// this file's seqs.
func (o *Outbox) ID() string { return o.id }

// ThingAck is one thing's part of a cloud acknowledgement, as the
// forwarder applies it.
type ThingAck struct {
	Thing string
	// Ranges are the acknowledged telemetry seqs, inclusive.
	Ranges []wire.Range
	// SentUpTo is the highest seq of Thing the caller has sent. Nothing
	// above it is removed, whatever the ranges say: an ack can only
	// describe data that was sent.
	SentUpTo uint64
}

// AckTelemetry removes the telemetry the cloud acknowledged as durable:
// for each thing, the records whose seq is inside one of its ranges and at
// most its SentUpTo. It does nothing and returns ErrOtherOutbox when
// outboxID is not ID(). Records already gone (acked twice, dropped) are
// ignored; removed counts the records it deleted. The lane's stats are
// updated as Ack updates them.
func (o *Outbox) AckTelemetry(ctx context.Context, outboxID string, acks []ThingAck) (removed int, err error) {
	if outboxID != o.id {
		return 0, fmt.Errorf("ack for outbox %q, this is %q: %w", outboxID, o.id, ErrOtherOutbox)
	}
	var n int // filled by the writer; read only after a nil error
	err = o.do(ctx, 0, func(w *wtx) error {
		n = 0
		for _, a := range acks {
			got, err := w.ackTelemetry(a)
			if err != nil {
				return err
			}
			n += got
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func (w *wtx) ackTelemetry(a ThingAck) (int, error) {
	b, err := w.thingBucket(Telemetry, a.Thing, false)
	if err != nil || b == nil {
		return 0, err
	}
	sb := w.tx.Bucket(bucketSeals).Bucket([]byte(a.Thing))
	var seqs []uint64
	c := b.Cursor()
	for _, r := range a.Ranges {
		last := min(r.Last, a.SentUpTo)
		if r.First == 0 || r.First > last {
			continue
		}
		for k, _ := c.Seek(seqKey(r.First)); k != nil && keySeq(k) <= last; k, _ = c.Next() {
			seqs = append(seqs, keySeq(k))
		}
	}
	n := 0
	for _, s := range seqs {
		_, ok, err := w.remove(Telemetry, b, s)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
		// A seal of a v1 batch that starts here has lost its first
		// record; its other records are dropped one by one.
		if sb != nil {
			if err := sb.Delete(seqKey(s)); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// Telemetry returns up to max pending telemetry records of thing with
// from <= seq <= to, in seq order (to 0: no upper bound). It seals nothing:
// every record keeps its seq, so a resend carries the same sample.
func (o *Outbox) Telemetry(ctx context.Context, thing string, from, to uint64, max int) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Record
	err := o.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(laneBucket(Telemetry)).Bucket([]byte(thing))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(seqKey(from)); k != nil && len(out) < max; k, v = c.Next() {
			seq := keySeq(k)
			if to != 0 && seq > to {
				break
			}
			e, err := decodeValue(v)
			if err != nil {
				return fmt.Errorf("telemetry %s seq %d: %w", thing, seq, err)
			}
			e.Lane, e.Thing = Telemetry, thing
			out = append(out, Record{Entry: e, Seq: seq})
		}
		return nil
	})
	return out, err
}
