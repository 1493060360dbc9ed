package outbox

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/bowline-iot/bowline/edge/wire"
)

// DroppedType is the event type that reports dropped telemetry.
const DroppedType = wire.TypeTelemetryDropped

// Drop reasons carried in the telemetry_dropped event.
const (
	ReasonDiskCap = "disk_cap"
	ReasonTTL     = "ttl"
)

// dropRun is one bowl.telemetry_dropped report in the making: its data
// (the thing's telemetry seqs FromSeq..ToSeq, Count of them removed
// unsent) and its thing.
type dropRun struct {
	wire.TelemetryDropped
	thing string
}

// oldestTelemetry returns the thing whose first telemetry record is oldest.
func (w *wtx) oldestTelemetry() (thing string, b *bolt.Bucket, ok bool) {
	var best time.Time
	lb := w.tx.Bucket(laneBucket(Telemetry))
	_ = lb.ForEachBucket(func(name []byte) error {
		tb := lb.Bucket(name)
		k, v := tb.Cursor().First()
		if k == nil {
			return nil
		}
		e, err := decodeValue(v)
		if err != nil {
			e.At = time.Time{} // undecodable: treat as oldest
		}
		if !ok || e.At.Before(best) {
			best, thing, b, ok = e.At, string(name), tb, true
		}
		return nil
	})
	return thing, b, ok
}

// dropFirst removes the oldest run of thing's telemetry: its whole first
// seal when the first record is sealed (a sealed batch is never split), or
// else just the first record.
func (w *wtx) dropFirst(thing string, b *bolt.Bucket) (wire.TelemetryDropped, error) {
	k, _ := b.Cursor().First()
	first := keySeq(k)
	last := first
	sb := w.tx.Bucket(bucketSeals).Bucket([]byte(thing))
	if sb != nil {
		if v := sb.Get(k); len(v) == 8 {
			last = keySeq(v)
			if err := sb.Delete(k); err != nil {
				return wire.TelemetryDropped{}, err
			}
		}
	}
	r := wire.TelemetryDropped{FromSeq: first, ToSeq: last}
	for s := first; s <= last; s++ {
		e, ok, err := w.remove(Telemetry, b, s)
		if err != nil {
			return r, err
		}
		if !ok {
			continue
		}
		if r.Count == 0 {
			r.From = e.At
		}
		r.To = e.At
		r.Count++
	}
	return r, nil
}

func (w *wtx) enforceCap() error {
	maxBytes, maxTelemetry := w.budget.caps(w.o.cfg)
	var runs []*dropRun
	for {
		ev, tel := w.stat(bytesStat(Events)), w.stat(bytesStat(Telemetry))
		if tel == 0 || (tel <= maxTelemetry && ev+tel <= maxBytes) {
			break
		}
		thing, b, ok := w.oldestTelemetry()
		if !ok {
			break
		}
		r, err := w.dropFirst(thing, b)
		if err != nil {
			return err
		}
		runs = mergeRun(runs, thing, r)
	}
	return w.report(runs, ReasonDiskCap)
}

// mergeRun extends the thing's last run when r continues it.
func mergeRun(runs []*dropRun, thing string, r wire.TelemetryDropped) []*dropRun {
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].thing == thing {
			if runs[i].ToSeq+1 == r.FromSeq {
				runs[i].ToSeq = r.ToSeq
				runs[i].Count += r.Count
				if r.Count > 0 {
					runs[i].To = r.To
				}
				return runs
			}
			break
		}
	}
	return append(runs, &dropRun{TelemetryDropped: r, thing: thing})
}

// report writes one bowl.telemetry_dropped event per run.
func (w *wtx) report(runs []*dropRun, reason string) error {
	for _, r := range runs {
		if r.Count == 0 {
			continue
		}
		r.Reason = reason
		data, err := wire.Encode(r.TelemetryDropped)
		if err != nil {
			return err
		}
		e := Entry{
			Lane: Events, Thing: r.thing, At: w.o.cfg.Now().UTC(), Type: DroppedType,
			ID: fmt.Sprintf("telemetry_dropped-%d-%d", r.FromSeq, r.ToSeq), Data: data,
		}
		if err := w.appendEvent(e); err != nil {
			return err
		}
		if err := w.addStat(droppedStat(Telemetry), int64(r.Count)); err != nil {
			return err
		}
		w.o.log.Warn("dropped telemetry", "thing", r.thing, "from_seq", r.FromSeq, "to_seq", r.ToSeq, "count", r.Count, "reason", reason)
		w.drops = append(w.drops, dropNote{Telemetry, r.thing, int(r.Count), reason})
	}
	return nil
}

// Expire applies the lanes' TTLs: telemetry that waited longer than
// TelemetryTTL is dropped and reported, events that waited longer than
// EventTTL (when set) are removed and counted. Waiting is measured on the
// age clock (Config.Elapsed), not by the records' wall times, so a clock
// stepped forward (NTP after a gateway booted at 1970) expires nothing.
// The agent calls it periodically.
func (o *Outbox) Expire(ctx context.Context) error {
	return o.do(ctx, 0, func(w *wtx) error { return w.expire() })
}

func (w *wtx) expire() error {
	waited := func(v []byte, ttl time.Duration) bool {
		_, at, err := decodeValueAge(v)
		return err != nil || w.age-at > ttl // undecodable: treat as oldest, as the disk cap does
	}
	if ttl := w.o.cfg.TelemetryTTL; ttl > 0 {
		var runs []*dropRun
		lb := w.tx.Bucket(laneBucket(Telemetry))
		var things []string
		_ = lb.ForEachBucket(func(name []byte) error { things = append(things, string(name)); return nil })
		for _, thing := range things {
			b := lb.Bucket([]byte(thing))
			for {
				k, v := b.Cursor().First()
				if k == nil {
					break
				}
				if !waited(v, ttl) {
					break
				}
				r, err := w.dropFirst(thing, b)
				if err != nil {
					return err
				}
				runs = mergeRun(runs, thing, r)
			}
		}
		if err := w.report(runs, ReasonTTL); err != nil {
			return err
		}
	}
	if ttl := w.o.cfg.EventTTL; ttl > 0 {
		lb := w.tx.Bucket(laneBucket(Events))
		var things []string
		_ = lb.ForEachBucket(func(name []byte) error { things = append(things, string(name)); return nil })
		for _, thing := range things {
			b := lb.Bucket([]byte(thing))
			n := 0
			for {
				k, v := b.Cursor().First()
				if k == nil {
					break
				}
				if !waited(v, ttl) {
					break
				}
				if _, _, err := w.remove(Events, b, keySeq(k)); err != nil {
					return err
				}
				n++
			}
			if n > 0 {
				if err := w.addStat(droppedStat(Events), int64(n)); err != nil {
					return err
				}
				w.o.log.Warn("expired events", "thing", thing, "count", n, "ttl", ttl)
				w.drops = append(w.drops, dropNote{Events, thing, n, ReasonTTL})
			}
		}
	}
	return nil
}
