package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// pet is one animal eating from a bowl.
type pet struct {
	tag         string  // 15-digit FDX-B number
	mealG       float64 // typical meal, grams
	tauS        float64 // eating-curve time constant, seconds
	mealsPerDay int
}

func newPets(rng *rand.Rand, n int) []pet {
	pets := make([]pet, n)
	for i := range pets {
		pets[i] = pet{
			tag:         fmt.Sprintf("9002150%08d", rng.IntN(100_000_000)),
			mealG:       15 + rng.Float64()*30,
			tauS:        40 + rng.Float64()*80,
			mealsPerDay: 3 + rng.IntN(3),
		}
	}
	return pets
}

type activityKind int

const (
	actMeal activityKind = iota
	actRefill
)

// activity is a planned meal or refill, at a time since boot.
type activity struct {
	kind  activityKind
	at    time.Duration
	pet   int     // meal
	grams float64 // meal: what the pet intends to eat
}

// planDay appends the activities of simulated day d (0 = the day of
// Start) that fall after boot: refills around 07:00 and 18:30 (the evening
// one sometimes forgotten) and each pet's meals spread over 06:00-22:30.
func planDay(rng *rand.Rand, cfg Config, pets []pet, d int) []activity {
	y, m, day := cfg.Start.Date()
	midnight := time.Date(y, m, day+d, 0, 0, 0, 0, cfg.Start.Location())
	var out []activity
	add := func(a activity, wall time.Time) {
		if at := wall.Sub(cfg.Start); at >= 0 {
			a.at = at
			out = append(out, a)
		}
	}
	jitter := func(minutes float64) time.Duration {
		return time.Duration((rng.Float64()*2 - 1) * minutes * float64(time.Minute))
	}
	add(activity{kind: actRefill}, midnight.Add(7*time.Hour+jitter(20)))
	if rng.Float64() >= cfg.SkipRefillChance {
		add(activity{kind: actRefill}, midnight.Add(18*time.Hour+30*time.Minute+jitter(20)))
	}
	for i, p := range pets {
		window := 16*time.Hour + 30*time.Minute
		slot := window / time.Duration(p.mealsPerDay)
		for k := 0; k < p.mealsPerDay; k++ {
			at := 6*time.Hour + time.Duration(k)*slot + time.Duration(rng.Float64()*float64(slot))
			add(activity{kind: actMeal, pet: i, grams: p.mealG * (0.7 + 0.6*rng.Float64())}, midnight.Add(at))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}
