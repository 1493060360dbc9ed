package console

import (
	"fmt"
	"time"
)

// Two clocks show on the console's pages, and every time says which
// (docs/console.md, "Clocks"):
//
//   - bowl time: the gateways' clock, which stamps readings, meals and
//     gaps (bowline dev's simulated clock, Config.SimClock; in production
//     the gateways' corrected clock, which is the wall clock);
//   - the wall clock: when this process, the engine or an operator did
//     something (event rows' occurred_at, dead letters, orders, redrives).
//
// Both are shown in UTC.
const (
	clockBowl = "bowl time"
	clockWall = "wall clock"
)

// bowlClockName names the bowls' clock for labels: "bowl time
// (simulated)" under bowline dev's demo clock.
func (c *Console) bowlClockName() string {
	if c.cfg.SimClock != nil {
		return clockBowl + " (simulated)"
	}
	return clockBowl
}

// age is how old a figure is, on the clock its reading was stamped with.
type age struct {
	D     time.Duration
	Known bool // false: no reading yet
}

// ageOf is the age at now of a reading stamped at t (zero: none).
func ageOf(t, now time.Time) age {
	if t.IsZero() {
		return age{}
	}
	return age{D: max(0, now.Sub(t)), Known: true}
}

// Stale reports whether the reading is older than the telemetry path
// may lag when it works (lagReader).
func (a age) Stale() bool { return !a.Known || a.D > lagReader }

// String says the age in words: "40 s old", "80 min old".
func (a age) String() string {
	if !a.Known {
		return "no reading yet"
	}
	return fmtDuration(a.D) + " old"
}

// fmtDuration rounds d for a person: seconds, minutes, hours or days.
func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}
