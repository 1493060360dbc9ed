package detect

import (
	"fmt"
	"time"
)

// Config tunes a Detector. Zero fields take the documented defaults.
type Config struct {
	// MedianWindow is the running median's length in samples (odd).
	// Default 9 (180 ms at 50 Hz).
	MedianWindow int
	// DepartG is how far the filtered weight must leave the committed
	// level to start an episode. Default 4 g.
	DepartG float64
	// StableG is the band the weight must stay in to count as settled.
	// Default 3 g.
	StableG float64
	// Settle is how long the weight must stay settled to end an episode.
	// Default 6s.
	Settle time.Duration
	// TagQuiet is how long after the last tag read an episode may end.
	// Default 6s.
	TagQuiet time.Duration
	// MealMinG is the smallest loss reported as a meal. Default 2 g.
	MealMinG float64
	// RefillMinG is the smallest gain reported as a refill. Default 15 g.
	RefillMinG float64
	// FoodLowG is the food-low threshold. Default 40 g.
	FoodLowG float64
	// EmptyG is the level under which the bowl is empty. Default 5 g.
	EmptyG float64
	// HysteresisG re-arms food-low and empty above threshold+hysteresis.
	// Default 10 g.
	HysteresisG float64
	// ActivityWindow is the span of raw samples whose spread tells a pet
	// or a hand at the bowl from a still bowl. Default 1.5s.
	ActivityWindow time.Duration
	// ActivityG is the robust spread (1.4826 x median absolute deviation)
	// above which the bowl counts as touched; set it above the load cell's
	// own noise. Default 0.9 g.
	ActivityG float64
}

func (c *Config) setDefaults() {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	if c.MedianWindow == 0 {
		c.MedianWindow = 9
	}
	def(&c.DepartG, 4)
	def(&c.StableG, 3)
	def(&c.MealMinG, 2)
	def(&c.RefillMinG, 15)
	def(&c.FoodLowG, 40)
	def(&c.EmptyG, 5)
	def(&c.HysteresisG, 10)
	def(&c.ActivityG, 0.9)
	if c.ActivityWindow == 0 {
		c.ActivityWindow = 1500 * time.Millisecond
	}
	if c.Settle == 0 {
		c.Settle = 6 * time.Second
	}
	if c.TagQuiet == 0 {
		c.TagQuiet = 6 * time.Second
	}
}

// Validate reports the first field out of range.
func (c Config) Validate() error {
	switch {
	case c.MedianWindow < 0 || (c.MedianWindow > 0 && c.MedianWindow%2 == 0) || c.MedianWindow > 101:
		return fmt.Errorf("detect config: median_window %d: want an odd number 1-101", c.MedianWindow)
	case c.DepartG < 0 || c.StableG < 0 || c.MealMinG < 0 || c.RefillMinG < 0:
		return fmt.Errorf("detect config: depart_g, stable_g, meal_min_g, refill_min_g: must not be negative")
	case c.EmptyG < 0 || c.FoodLowG < 0 || (c.FoodLowG > 0 && c.EmptyG > c.FoodLowG):
		return fmt.Errorf("detect config: empty_g %g, food_low_g %g: want 0 <= empty_g <= food_low_g", c.EmptyG, c.FoodLowG)
	case c.Settle < 0 || c.TagQuiet < 0 || c.ActivityWindow < 0 || c.ActivityG < 0:
		return fmt.Errorf("detect config: settle, tag_quiet, activity_window, activity_g: must not be negative")
	}
	return nil
}
