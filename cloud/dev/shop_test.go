package dev

import "testing"

func TestShopPlan(t *testing.T) {
	for _, tt := range []struct {
		rate float64
		want []int
	}{{0.25, []int{2, 6, 10}}, {0, nil}, {1, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}, {0.5, []int{1, 3, 5, 7, 9, 11}}} {
		var got []int
		for n := 1; n <= 12; n++ {
			if shopPlan(n, tt.rate) {
				got = append(got, n)
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("rate %v: failing orders %v; want %v", tt.rate, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("rate %v: failing orders %v; want %v", tt.rate, got, tt.want)
				break
			}
		}
	}
}
