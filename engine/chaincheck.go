package engine

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"slices"
)

// ChainCheck says what CheckChain checks.
type ChainCheck struct {
	// Tenant is the tenant whose log the events are.
	Tenant string
	// From is the position the events go on from: GenesisPoint for a whole
	// log, or a position an earlier check returned (ChainReport.Verified).
	// When From.Seq > 0 the first event must be the row at From.Seq still
	// carrying From.Hash; it is compared, not counted. A From.Hash of ""
	// means Genesis.
	From ChainPoint
	// Anchors are positions the chain must still pass through
	// (Verifier.VerifyAgainst), in any order; one at seq 0 is ignored.
	Anchors []ChainPoint
	// Limit is the most events checked after From (0: no limit). When the
	// events hold more, the report is Partial and the head is not
	// compared.
	Limit int
}

// CheckChain checks a tenant's chain without any I/O: events are its
// log after c.From in seq order, as Log.After yields them (with the row
// at c.From.Seq first when c.From.Seq > 0), and head its head row. It
// recomputes every hash, follows every link and seq, compares the anchors
// and, at the end of the log, the head, and reports the first position at
// fault. A *RowError among the events is a finding (ReasonMalformed, or
// ReasonDuplicate for a row whose sort key names another seq); any other
// error is a failed read, returned with the report so far.
//
// Unlike Verifier.VerifyChain it cannot read the head again, so a head
// read before events committed after it is reported ReasonHeadBehind.
func CheckChain(c ChainCheck, events iter.Seq2[Envelope, error], head Head) (ChainReport, error) {
	w := newChainWalk(c)
	w.rep.HeadSeq = head.Seq
	if err := w.walk(events); err != nil {
		return w.rep, err
	}
	return w.finish(head), nil
}

// chainWalk is one pass of the chain check: the report so far and the
// position reached.
type chainWalk struct {
	c   ChainCheck
	rep ChainReport
	// last and prevHash are the newest position that checked out.
	last     uint64
	prevHash string
	// checkpoint is true until the row at c.From.Seq has been compared.
	checkpoint bool
	// points are the anchors not yet passed, by seq; matched is the
	// newest one that still matched.
	points  []ChainPoint
	matched uint64
}

func newChainWalk(c ChainCheck) *chainWalk {
	if c.From.Hash == "" {
		c.From.Hash = Genesis
	}
	w := &chainWalk{c: c, last: c.From.Seq, prevHash: c.From.Hash, checkpoint: c.From.Seq > 0}
	w.rep = ChainReport{Tenant: c.Tenant, Intact: true, Verified: c.From}
	for _, p := range c.Anchors {
		if p.Seq > 0 {
			w.points = append(w.points, p)
		}
	}
	slices.SortFunc(w.points, func(a, b ChainPoint) int { return cmp.Compare(a.Seq, b.Seq) })
	if len(w.points) > 0 {
		w.rep.AnchoredSeq = w.points[len(w.points)-1].Seq
	}
	return w
}

// readAfter is the seq the log is read after: the checkpoint row is read
// too.
func (w *chainWalk) readAfter() uint64 {
	if w.checkpoint {
		return w.c.From.Seq - 1
	}
	return w.c.From.Seq
}

// readLimit is how many rows the walk reads at most: the checkpoint row,
// the limit and one more to see whether the log goes on (0: no limit).
func (w *chainWalk) readLimit() int {
	if w.c.Limit <= 0 {
		return 0
	}
	n := w.c.Limit + 1
	if w.checkpoint {
		n++
	}
	return n
}

func (w *chainWalk) bad(seq uint64, r Reason, format string, args ...any) {
	w.rep.Intact, w.rep.FirstBadSeq, w.rep.Reason, w.rep.Detail = false, seq, r, fmt.Sprintf(format, args...)
}

// walk takes events until the chain breaks, the limit is reached or the
// events end. It returns only a failed read.
func (w *chainWalk) walk(events iter.Seq2[Envelope, error]) error {
	for env, err := range events {
		var row *RowError
		if err != nil && !errors.As(err, &row) {
			return err
		}
		if w.checkpoint {
			w.checkpoint = false
			w.compareCheckpoint(env, row)
			if !w.rep.Intact {
				return nil
			}
			continue
		}
		if w.c.Limit > 0 && w.rep.Events == w.c.Limit {
			w.rep.Partial = true
			return nil
		}
		w.rep.Events++
		if !w.follow(env, row) || !w.passAnchors(env) {
			return nil
		}
		w.last, w.prevHash = env.Seq, env.Hash
		w.rep.Verified = ChainPoint{Seq: w.last, Hash: w.prevHash}
	}
	if w.checkpoint {
		w.bad(w.c.From.Seq, ReasonGap, "checkpoint seq %d is no longer in the log", w.c.From.Seq)
	}
	return nil
}

// compareCheckpoint checks that the first row is still the one at
// c.From: the same seq, the same stored hash, and it still hashes to it.
func (w *chainWalk) compareCheckpoint(env Envelope, row *RowError) {
	from := w.c.From
	switch {
	case row != nil && !row.KeyMismatch():
		w.bad(from.Seq, ReasonMalformed, "checkpoint row %d: %v", row.Key, row.Err)
	case row != nil:
		w.bad(from.Seq, ReasonGap, "checkpoint seq %d missing: next row is seq %d", from.Seq, row.Seq)
	case env.Seq != from.Seq:
		w.bad(from.Seq, ReasonGap, "checkpoint seq %d missing: next row is seq %d", from.Seq, env.Seq)
	case env.Hash != from.Hash:
		w.bad(from.Seq, ReasonHashMismatch, "stored hash %.12s…; verified as %.12s…", env.Hash, from.Hash)
	default:
		if h, err := ChainHash(env.PrevHash, env); err != nil || h != env.Hash {
			w.bad(from.Seq, ReasonHashMismatch, "checkpoint row no longer hashes to its stored hash")
		}
	}
}

// follow checks that env is the next row of the chain: well formed, the
// next seq, the tenant's, linked to the previous hash and hashing to its
// stored hash.
func (w *chainWalk) follow(env Envelope, row *RowError) bool {
	expected := w.last + 1
	switch {
	case row != nil && !row.KeyMismatch():
		w.bad(expected, ReasonMalformed, "row %d: %v", row.Key, row.Err)
	case row != nil:
		w.bad(expected, ReasonDuplicate, "row with sort key %d says seq %d", row.Key, row.Seq)
	case env.Seq <= w.last:
		w.bad(env.Seq, ReasonDuplicate, "seq %d after seq %d", env.Seq, w.last)
	case env.Seq > expected:
		w.bad(expected, ReasonGap, "seq %d missing: next row is seq %d", expected, env.Seq)
	case env.Tenant != w.c.Tenant:
		w.bad(env.Seq, ReasonHashMismatch, "row names tenant %q", env.Tenant)
	case env.PrevHash != w.prevHash:
		w.bad(env.Seq, ReasonPrevHashMismatch, "prev_hash %.12s…; previous hash is %.12s…", env.PrevHash, w.prevHash)
	}
	if !w.rep.Intact {
		return false
	}
	h, err := ChainHash(w.prevHash, env)
	if err != nil {
		w.bad(env.Seq, ReasonMalformed, "%v", err)
		return false
	}
	if h != env.Hash {
		w.bad(env.Seq, ReasonHashMismatch, "stored hash %.12s…; recomputed %.12s…", env.Hash, h)
		return false
	}
	return true
}

// passAnchors compares env with the anchors at or before its seq.
func (w *chainWalk) passAnchors(env Envelope) bool {
	for len(w.points) > 0 && w.points[0].Seq <= env.Seq {
		if p := w.points[0]; p.Seq == env.Seq {
			w.rep.Anchors++
			if p.Hash != env.Hash {
				w.bad(env.Seq, ReasonAnchorMismatch, "anchored hash %.12s…; row now %.12s…: rewritten and resealed after seq %d, at or before seq %d", p.Hash, env.Hash, w.matched, env.Seq)
				return false
			}
			w.matched = p.Seq
		}
		w.points = w.points[1:]
	}
	return true
}

// complete reports whether the walk reached the end of the log with the
// chain intact and every anchor passed: only then is the head compared.
func (w *chainWalk) complete() bool {
	return w.rep.Intact && !w.rep.Partial && len(w.points) == 0
}

// headStale reports whether head, read before the walk, is behind the log
// the walk read: events committed meanwhile, so the head is read again.
func (w *chainWalk) headStale(head Head) bool { return w.complete() && head.Seq < w.last }

// finish ends the report: an anchor left beyond the end of the log, or
// the head compared with the end of the log.
func (w *chainWalk) finish(head Head) ChainReport {
	if !w.rep.Intact || w.rep.Partial {
		return w.rep
	}
	if len(w.points) > 0 {
		// Anchors are read before the log and the log only grows, so an
		// anchored seq past its end means rows were removed.
		p := w.points[0]
		w.bad(w.last+1, ReasonAnchorAhead, "anchored seq %d (hash %.12s…); log ends at seq %d", p.Seq, p.Hash, w.last)
		return w.rep
	}
	w.rep.HeadSeq = head.Seq
	switch {
	case !head.Found && w.last > 0:
		w.bad(1, ReasonMissingHead, "%d events but no head row", w.last)
	case head.Seq > w.last:
		w.bad(w.last+1, ReasonHeadAhead, "head says last_seq %d; log ends at seq %d", head.Seq, w.last)
	case head.Seq < w.last:
		w.bad(head.Seq+1, ReasonHeadBehind, "head says last_seq %d; log holds seq %d", head.Seq, w.last)
	case head.Found && head.Hash != w.prevHash:
		w.bad(w.last, ReasonHeadHashMismatch, "head last_hash %.12s…; seq %d hash %.12s…", head.Hash, w.last, w.prevHash)
	}
	return w.rep
}
