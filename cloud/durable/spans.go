package durable

import (
	"slices"
	"sort"

	"github.com/bowline-iot/bowline/edge/wire"
)

// span is an inclusive range of seqs [From, To].
type span struct{ From, To uint64 }

// spanSet is the seqs of one (gateway, outbox, thing) seen in the stream:
// sorted, disjoint, non-adjacent spans. It only ever holds seqs that a
// record carried, so every range in it may be acknowledged; bounding it
// forgets the oldest spans (acknowledging less), never fills a hole.
type spanSet []span

// contains reports whether seq is in s.
func (s spanSet) contains(seq uint64) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i].To >= seq })
	return i < len(s) && s[i].From <= seq
}

// add merges [from, to] into s and returns the result.
func (s spanSet) add(from, to uint64) spanSet {
	s = append(s, span{from, to})
	sort.Slice(s, func(i, j int) bool { return s[i].From < s[j].From })
	out := s[:1]
	for _, sp := range s[1:] {
		last := &out[len(out)-1]
		if last.To == ^uint64(0) || sp.From <= last.To+1 { // overlapping or adjacent
			last.To = max(last.To, sp.To)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// union merges every span of o into s.
func (s spanSet) union(o spanSet) spanSet {
	for _, sp := range o {
		s = s.add(sp.From, sp.To)
	}
	return s
}

// holes returns the missing ranges between the spans.
func (s spanSet) holes() []span {
	var h []span
	for i := 1; i < len(s); i++ {
		h = append(h, span{s[i-1].To + 1, s[i].From - 1})
	}
	return h
}

// bound drops the lowest spans until at most n remain and returns the
// result and how many seqs it forgot. Forgetting a span only makes the
// consumer acknowledge less and, for seqs that old, count a resend twice
// in a rollup; merging across the hole instead would acknowledge seqs the
// stream never carried.
func (s spanSet) bound(n int) (spanSet, uint64) {
	var forgot uint64
	for len(s) > n && len(s) > 1 {
		forgot += s[0].To - s[0].From + 1
		s = s[1:]
	}
	return slices.Clip(s), forgot
}

// ranges returns s as acknowledgement ranges; seq 0 is no outbox seq
// (they start at 1) and is left out, as wire.AckMessage requires.
func (s spanSet) ranges() []wire.Range {
	r := make([]wire.Range, 0, len(s))
	for _, sp := range s {
		if sp.From == 0 {
			if sp.To == 0 {
				continue
			}
			sp.From = 1
		}
		r = append(r, wire.Range{First: sp.From, Last: sp.To})
	}
	return r
}

// clone returns a copy of s.
func (s spanSet) clone() spanSet { return slices.Clone(s) }
