package detect

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Detector is one bowl's event detector. It is not safe for concurrent
// use: a bowl's samples arrive in order from one goroutine.
type Detector struct {
	cfg Config
	st  state
}

// state is everything the detector remembers; it is saved with the outbox
// (Snapshot) so a restart continues exactly where the last commit left off.
type state struct {
	Med []float64 `json:"med"`
	// Raw samples of the last ActivityWindow, for the activity measure.
	Raw     []float64 `json:"raw"`
	RawT    []int64   `json:"raw_t"`
	Touched time.Time `json:"touched"` // last sample with activity
	// ActEval is when the activity measure was last computed; Active its
	// result (it is computed at most every ActivityWindow/15).
	ActEval time.Time `json:"act_eval"`
	Active  bool      `json:"active"`

	HasLevel   bool    `json:"has_level"`
	Level      float64 `json:"level"`
	LowArmed   bool    `json:"low_armed"`
	EmptyArmed bool    `json:"empty_armed"`

	// The settled window: samples within StableG of their running mean.
	Sum         float64   `json:"sum"`
	N           int       `json:"n"`
	SettleStart time.Time `json:"settle_start"`
	SettleRef   Ref       `json:"settle_ref"`
	Filtered    float64   `json:"filtered"`

	InEp    bool           `json:"in_ep"`
	EpStart time.Time      `json:"ep_start"`
	EpRef   Ref            `json:"ep_ref"`
	Tags    map[string]int `json:"tags,omitempty"`
	CurTag  string         `json:"cur_tag,omitempty"`
	LastTag time.Time      `json:"last_tag"`
}

// New returns a Detector; cfg is validated.
func New(cfg Config) (*Detector, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Detector{cfg: cfg, st: state{LowArmed: true, EmptyArmed: true}}, nil
}

// Snapshot returns the detector's state as JSON.
func (d *Detector) Snapshot() ([]byte, error) { return json.Marshal(d.st) }

// Restore replaces the state with a Snapshot.
func (d *Detector) Restore(b []byte) error {
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("restore detector state: %w", err)
	}
	d.st = st
	return nil
}

// Clone returns an independent copy (to roll back a failed delivery).
func (d *Detector) Clone() *Detector {
	c := &Detector{cfg: d.cfg, st: d.st}
	c.st.Med = slices.Clone(d.st.Med)
	c.st.Raw = slices.Clone(d.st.Raw)
	c.st.RawT = slices.Clone(d.st.RawT)
	if d.st.Tags != nil {
		c.st.Tags = make(map[string]int, len(d.st.Tags))
		for k, v := range d.st.Tags {
			c.st.Tags[k] = v
		}
	}
	return c
}

// Level returns the committed food level and whether there is one yet.
func (d *Detector) Level() (float64, bool) { return d.st.Level, d.st.HasLevel }

// Weight feeds one raw load-cell sample (grams) and returns the events it
// completes.
func (d *Detector) Weight(ref Ref, at time.Time, grams float64) []Event {
	st := &d.st
	f := d.median(grams)
	st.Filtered = f
	if st.N == 0 || math.Abs(f-st.Sum/float64(st.N)) > d.cfg.StableG/2 {
		st.Sum, st.N, st.SettleStart, st.SettleRef = f, 1, at, ref
	} else {
		st.Sum += f
		st.N++
	}
	if d.active(at, grams) {
		st.Touched = at
	}
	settled := at.Sub(st.SettleStart) >= d.cfg.Settle && at.Sub(st.Touched) >= d.cfg.Settle
	mean := st.Sum / float64(st.N)
	var out []Event
	switch {
	case !st.HasLevel:
		if settled {
			st.HasLevel, st.Level = true, mean
			out = d.thresholds(out, ref, at)
		}
	case !st.InEp:
		if math.Abs(f-st.Level) > d.cfg.DepartG || st.Touched.Equal(at) {
			d.startEpisode(ref, at)
		} else if settled {
			st.Level = mean // follow slow drift (temperature, evaporation)
		}
	default:
		quiet := st.LastTag.IsZero() || at.Sub(st.LastTag) >= d.cfg.TagQuiet
		if settled && quiet {
			out = d.endEpisode(out, mean, st.SettleStart, at)
		}
	}
	return out
}

// Tag feeds one tag read and returns the events it completes (a tag
// change ends the previous pet's meal).
func (d *Detector) Tag(ref Ref, at time.Time, tag string) []Event {
	st := &d.st
	var out []Event
	if st.InEp && st.CurTag != "" && tag != st.CurTag && st.HasLevel {
		// Another pet took over: close the running meal at the current level.
		out = d.endEpisode(out, st.Filtered, at, at)
	}
	if !st.InEp {
		d.startEpisode(ref, at)
	}
	if st.Tags == nil {
		st.Tags = map[string]int{}
	}
	st.Tags[tag]++
	st.CurTag, st.LastTag = tag, at
	return out
}

func (d *Detector) startEpisode(ref Ref, at time.Time) {
	st := &d.st
	st.InEp, st.EpStart, st.EpRef, st.Tags, st.CurTag = true, at, ref, nil, ""
}

func (d *Detector) endEpisode(out []Event, level float64, endAt, now time.Time) []Event {
	st := &d.st
	delta := level - st.Level
	switch {
	case delta <= -d.cfg.MealMinG:
		out = append(out, Event{
			ID: "meal-" + st.EpRef.String(), At: endAt,
			Data: wire.MealFinished{GramsEaten: round1(-delta), DurationS: round1(max(0, endAt.Sub(st.EpStart).Seconds())), StartedAt: st.EpStart, PetTag: topTag(st.Tags)},
		})
	case delta >= d.cfg.RefillMinG:
		out = append(out, Event{
			ID: "refill-" + st.EpRef.String(), At: endAt,
			Data: wire.Refilled{GramsAdded: round1(delta), LevelG: round1(level)},
		})
	}
	ref := st.EpRef
	st.InEp, st.Tags, st.CurTag = false, nil, ""
	if delta <= -d.cfg.MealMinG || delta >= d.cfg.RefillMinG {
		st.Level = level
		out = d.thresholds(out, ref, endAt)
	}
	return out
}

func (d *Detector) thresholds(out []Event, ref Ref, at time.Time) []Event {
	st, c := &d.st, d.cfg
	if st.Level > c.FoodLowG+c.HysteresisG {
		st.LowArmed = true
	}
	if st.Level > c.EmptyG+c.HysteresisG {
		st.EmptyArmed = true
	}
	if st.LowArmed && st.Level < c.FoodLowG && st.Level >= c.EmptyG {
		st.LowArmed = false
		out = append(out, Event{ID: "food_low-" + ref.String(), At: at, Data: wire.FoodLow{LevelG: round1(st.Level), ThresholdG: c.FoodLowG}})
	}
	if st.EmptyArmed && st.Level < c.EmptyG {
		st.EmptyArmed, st.LowArmed = false, false
		out = append(out, Event{ID: "empty-" + ref.String(), At: at, Data: wire.Empty{LevelG: new(round1(max(0, st.Level)))}})
	}
	return out
}

// maxActivitySamples bounds the activity window whatever the timestamps
// (over 2.7 kHz in the default 1.5 s window; a load cell gives 50 Hz).
const maxActivitySamples = 4096

// active reports whether the raw samples of the last ActivityWindow
// spread more than ActivityG (robustly: single-sample spikes do not count).
func (d *Detector) active(at time.Time, x float64) bool {
	st := &d.st
	if n := len(st.RawT); n > 0 && at.UnixNano() < st.RawT[n-1] {
		// The clock stepped back: the samples stamped before the step
		// would hold the window open until the clock caught up.
		st.Raw, st.RawT = st.Raw[:0], st.RawT[:0]
	}
	st.Raw = append(st.Raw, x)
	st.RawT = append(st.RawT, at.UnixNano())
	cut := at.Add(-d.cfg.ActivityWindow).UnixNano()
	i := max(0, len(st.RawT)-maxActivitySamples) // samples bunched in time
	for i < len(st.RawT)-1 && st.RawT[i] < cut {
		i++
	}
	if i > 0 {
		st.Raw, st.RawT = slices.Delete(st.Raw, 0, i), slices.Delete(st.RawT, 0, i)
	}
	if len(st.Raw) < 5 {
		return false
	}
	if at.Sub(st.ActEval) < d.cfg.ActivityWindow/15 {
		return st.Active
	}
	st.ActEval = at
	s := slices.Clone(st.Raw)
	slices.Sort(s)
	med := s[len(s)/2]
	for j := range s {
		s[j] = math.Abs(s[j] - med)
	}
	slices.Sort(s)
	st.Active = 1.4826*s[len(s)/2] > d.cfg.ActivityG
	return st.Active
}

func (d *Detector) median(x float64) float64 {
	st := &d.st
	st.Med = append(st.Med, x)
	if len(st.Med) > d.cfg.MedianWindow {
		st.Med = st.Med[len(st.Med)-d.cfg.MedianWindow:]
	}
	s := slices.Clone(st.Med)
	slices.Sort(s)
	return s[len(s)/2]
}

func topTag(tags map[string]int) string {
	best, n := "", 0
	for t, c := range tags {
		if c > n || (c == n && t < best) {
			best, n = t, c
		}
	}
	return best
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
