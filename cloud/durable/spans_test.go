package durable

import (
	"slices"
	"testing"
)

func TestSpanSet(t *testing.T) {
	for _, tc := range []struct {
		name  string
		adds  [][2]uint64
		want  spanSet
		holes []span
	}{
		{"merges adjacent", [][2]uint64{{1, 5}, {6, 9}}, spanSet{{1, 9}}, nil},
		{"merges overlapping out of order", [][2]uint64{{10, 20}, {1, 12}}, spanSet{{1, 20}}, nil},
		{"keeps holes", [][2]uint64{{1, 5}, {10, 12}, {20, 20}}, spanSet{{1, 5}, {10, 12}, {20, 20}}, []span{{6, 9}, {13, 19}}},
		{"fills a hole", [][2]uint64{{1, 5}, {10, 12}, {6, 9}}, spanSet{{1, 12}}, nil},
		{"duplicate", [][2]uint64{{3, 3}, {3, 3}}, spanSet{{3, 3}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s spanSet
			for _, a := range tc.adds {
				s = s.add(a[0], a[1])
			}
			if !slices.Equal(s, tc.want) {
				t.Errorf("spans = %v; want %v", s, tc.want)
			}
			if h := s.holes(); !slices.Equal(h, tc.holes) {
				t.Errorf("holes = %v; want %v", h, tc.holes)
			}
		})
	}
}

func TestSpanSetContains(t *testing.T) {
	s := spanSet{{1, 5}, {10, 12}}
	for seq, want := range map[uint64]bool{0: false, 1: true, 5: true, 6: false, 9: false, 10: true, 12: true, 13: false} {
		if got := s.contains(seq); got != want {
			t.Errorf("contains(%d) = %v; want %v", seq, got, want)
		}
	}
}

// Bounding forgets the oldest spans; it never merges across a hole, which
// would make an ack name seqs the stream never carried.
func TestSpanSetBoundForgetsOldestNeverFills(t *testing.T) {
	s := spanSet{{1, 1}, {3, 3}, {5, 5}, {7, 9}}
	got, forgot := s.bound(2)
	if want := (spanSet{{5, 5}, {7, 9}}); !slices.Equal(got, want) {
		t.Errorf("bound(2) = %v; want %v", got, want)
	}
	if forgot != 2 {
		t.Errorf("forgot = %d; want 2", forgot)
	}
	for _, q := range []uint64{2, 4, 6} {
		if got.contains(q) {
			t.Errorf("bounded spans contain unseen seq %d", q)
		}
	}
}
