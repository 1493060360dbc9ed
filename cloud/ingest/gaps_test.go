package ingest

import (
	"reflect"
	"testing"
	"time"
)

func TestSeqStateAddMerges(t *testing.T) {
	var s seqState
	for _, sp := range []span{{5, 5}, {1, 2}, {3, 3}, {10, 12}, {7, 8}, {11, 20}} {
		s.add(sp.From, sp.To)
	}
	want := []span{{1, 3}, {5, 5}, {7, 8}, {10, 20}}
	if !reflect.DeepEqual(s.Spans, want) {
		t.Fatalf("spans = %v; want %v", s.Spans, want)
	}
	if got, want := s.holes(), []span{{4, 4}, {6, 6}, {9, 9}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("holes = %v; want %v", got, want)
	}
}

func TestSeqStateDueAfterGrace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var s seqState
	s.add(1, 10)
	s.add(15, 20)
	if h, _ := s.due(t0, time.Minute); len(h) != 0 {
		t.Fatalf("due at first sight = %v; want none", h)
	}
	s.add(11, 12) // the hole shrinks to 13..14 and is a new hole
	if h, _ := s.due(t0.Add(30*time.Second), time.Minute); len(h) != 0 {
		t.Fatalf("due within grace = %v; want none", h)
	}
	h, since := s.due(t0.Add(91*time.Second), time.Minute)
	if want := []span{{13, 14}}; !reflect.DeepEqual(h, want) || !since[0].Equal(t0.Add(30*time.Second)) {
		t.Fatalf("due after grace = %v since %v; want %v since %v", h, since, want, t0.Add(30*time.Second))
	}
	s.add(13, 14)
	if h, _ := s.due(t0.Add(200*time.Second), time.Minute); len(h) != 0 || len(s.Noticed) != 0 {
		t.Fatalf("after the hole filled: due %v, notes %v; want none", h, s.Noticed)
	}
}
