package forward

import (
	"slices"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
)

// ledger is the forwarder's memory of the telemetry it has sent (wire
// v2): per thing, runs of contiguous seqs that are in flight (published,
// PUBACK pending) or sent (PUBACKed, cloud ack pending). It lives in
// memory only: after a restart everything in the outbox counts as unsent,
// which costs duplicates the cloud drops by (thing, outbox, seq), never
// data. It is safe for concurrent use.
type ledger struct {
	mu     sync.Mutex
	things map[string]*sentThing
	nextID uint64
}

type sentThing struct {
	runs []run // sorted by first, disjoint
	// high is the highest seq PUBACKed in this process: an ack removes
	// nothing above it (docs/telemetry-path.md, "The gateway").
	high uint64
}

// run is seqs first..last of one thing, every one of them a record the
// forwarder read from the outbox and published.
type run struct {
	first, last uint64
	batch       uint64    // the batch that carries it while in flight; 0 once sent
	sentAt      time.Time // the publish time, once PUBACKed
}

func (r run) sent() bool { return r.batch == 0 }

// interval is an inclusive seq range to read; last 0 means no bound.
type interval struct{ first, last uint64 }

func newLedger() *ledger { return &ledger{things: map[string]*sentThing{}} }

func (l *ledger) thing(name string) *sentThing {
	t := l.things[name]
	if t == nil {
		t = &sentThing{}
		l.things[name] = t
	}
	return t
}

// newBatch returns an id for a batch about to be claimed.
func (l *ledger) newBatch() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextID++
	return l.nextID
}

// wanted returns the seq intervals of thing to send now: every seq not in
// a run, and every run sent at or before expiredAt (no cloud ack in time).
// In-flight runs are never wanted.
func (l *ledger) wanted(thing string, expiredAt time.Time) []interval {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []interval
	pos := uint64(1)
	if t := l.things[thing]; t != nil {
		for _, r := range t.runs {
			if r.sent() && !r.sentAt.After(expiredAt) {
				continue // expired: read it again
			}
			if pos < r.first {
				out = append(out, interval{pos, r.first - 1})
			}
			pos = r.last + 1
		}
	}
	return append(out, interval{pos, 0})
}

// subtract removes first..last (last 0: no bound) from thing's runs.
func (t *sentThing) subtract(first, last uint64) {
	if last == 0 {
		last = ^uint64(0)
	}
	out := t.runs[:0:0]
	for _, r := range t.runs {
		if r.last < first || r.first > last {
			out = append(out, r)
			continue
		}
		if r.first < first {
			left := r
			left.last = first - 1
			out = append(out, left)
		}
		if r.last > last {
			right := r
			right.first = last + 1
			out = append(out, right)
		}
	}
	t.runs = out
}

// claim records that batch carries seqs of thing: scanned is the interval
// read from the outbox (its old runs are replaced), seqs the records found
// there, in order.
func (l *ledger) claim(batch uint64, thing string, scanned interval, seqs []uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.thing(thing)
	t.subtract(scanned.first, scanned.last)
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] == seqs[j]+1 {
			j++
		}
		t.runs = append(t.runs, run{first: seqs[i], last: seqs[j], batch: batch})
		i = j + 1
	}
	slices.SortFunc(t.runs, func(a, b run) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
}

// sent marks batch's runs PUBACKed at sentAt, starting their ack timeout.
func (l *ledger) sent(batch uint64, sentAt time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.things {
		for i := range t.runs {
			if t.runs[i].batch == batch {
				t.runs[i].batch, t.runs[i].sentAt = 0, sentAt
				t.high = max(t.high, t.runs[i].last)
			}
		}
	}
}

// release forgets batch's runs: they were not PUBACKed, so they count as
// unsent again.
func (l *ledger) release(batch uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.things {
		t.runs = slices.DeleteFunc(t.runs, func(r run) bool { return r.batch == batch })
	}
}

// acks turns an ack's ranges into what the outbox may delete: only
// things this forwarder has sent, each bounded by its highest sent seq.
func (l *ledger) acks(things map[string][]wire.Range) []outbox.ThingAck {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := make([]string, 0, len(things))
	for name := range things {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []outbox.ThingAck
	for _, name := range names {
		t := l.things[name]
		if t == nil || t.high == 0 {
			continue
		}
		out = append(out, outbox.ThingAck{Thing: name, Ranges: things[name], SentUpTo: t.high})
	}
	return out
}

// acked forgets the acknowledged seqs.
func (l *ledger) acked(acks []outbox.ThingAck) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range acks {
		t := l.things[a.Thing]
		if t == nil {
			continue
		}
		for _, r := range a.Ranges {
			if last := min(r.Last, a.SentUpTo); r.First <= last {
				t.subtract(r.First, last)
			}
		}
	}
}

// unacked returns how many seqs are sent or in flight without a cloud
// ack, and the publish time of the oldest sent one (zero: none).
func (l *ledger) unacked() (n int64, oldest time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.things {
		for _, r := range t.runs {
			n += int64(r.last - r.first + 1)
			if r.sent() && (oldest.IsZero() || r.sentAt.Before(oldest)) {
				oldest = r.sentAt
			}
		}
	}
	return n, oldest
}
