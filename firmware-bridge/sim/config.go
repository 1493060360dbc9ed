package sim

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// DefaultStart is the simulated wall time of boot when Config.Start is
// zero: a fixed instant, so a seed alone reproduces a run.
var DefaultStart = time.Date(2026, 1, 5, 5, 0, 0, 0, time.UTC)

// Config describes a fleet of simulated bowls. Zero fields take the
// documented defaults.
type Config struct {
	// Bowls is the number of bowls; default 1. Device ids are bowl-000, ...
	Bowls int
	// Seed makes the run deterministic: the same seed and config give the
	// same readings and ground truth; default 1.
	Seed uint64
	// Start is the simulated wall time at boot (uptime 0); default
	// DefaultStart.
	Start time.Time
	// Speed is simulated seconds per real second; default 1. With 0 the
	// simulation runs as fast as the link takes frames and never loses a
	// reading (readings wait for ring space); with Speed > 0 it is real
	// firmware: a full ring refuses readings (MCUStats.Refused).
	Speed float64
	// SampleRateHz is the load cell rate; default 50. One WeightBatch
	// carries one second of samples (at most frame.MaxSamples).
	SampleRateHz int
	// PetsPerBowl is how many pets with RFID tags eat from each bowl; 1..4,
	// default 2.
	PetsPerBowl int
	// CapacityG is a full bowl in grams; default 400.
	CapacityG float64
	// LowG and EmptyG are the food-low and empty thresholds in grams;
	// defaults 60 and 5.
	LowG, EmptyG float64
	// The load cell and its ADC, as the package doc's "Load-cell model"
	// derives them.
	//
	// LoadCellG is the load cell's rated capacity in grams; default 5000
	// (a 5 kg single-point kitchen-scale cell). The firmware clips a
	// reading to ±LoadCellG.
	LoadCellG float64
	// ResolutionMg is the firmware's reported resolution: every reading is
	// calibrated and rounded to a multiple of it, in milligrams; default
	// 100 (0.1 g). 1 reports every milligram.
	ResolutionMg int
	// NoiseG is the white noise of one reading, rms grams, before rounding;
	// default 0.1.
	NoiseG float64
	// DriftGPerHour bounds the load cell's zero drift rate (each bowl draws
	// one in ±DriftGPerHour); default 0.5.
	DriftGPerHour float64
	// TempCoeffGPerC is the zero shift per degree Celsius away from 22 C;
	// default 0.3.
	TempCoeffGPerC float64
	// GlitchesPerHour is the mean rate of single spikes; default 0.5.
	GlitchesPerHour float64
	// SkipRefillChance is the chance the evening refill is forgotten (the
	// bowl then runs low and empty); default 0.25.
	SkipRefillChance float64
	// Faults are faults on demand at fixed simulated times (see also
	// Bowl.InjectFault).
	Faults []ScheduledFault
	// FirstMealAfter, when positive, adds one meal of each bowl's first
	// pet at (index+1) x FirstMealAfter after boot, before the day's plan,
	// so a demo shows a meal at once whatever the time of day. It draws
	// nothing from the random stream: the rest of the run is the same.
	FirstMealAfter time.Duration
	// RingSize and RetransmitTimeout configure each bowl's MCU (MCUConfig
	// defaults).
	RingSize          int
	RetransmitTimeout time.Duration
	// OnTruth receives every ground-truth event, from the bowls' goroutines
	// (serialised by the Fleet); optional. See TruthWriter.
	OnTruth func(Truth)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// ScheduledFault is a fault raised at a simulated time after boot.
type ScheduledFault struct {
	Bowl   int // index; -1 for every bowl
	After  time.Duration
	Code   frame.FaultCode
	Detail string
}

func (c Config) withDefaults() Config {
	if c.Bowls == 0 {
		c.Bowls = 1
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Start.IsZero() {
		c.Start = DefaultStart
	}
	if c.SampleRateHz == 0 {
		c.SampleRateHz = 50
	}
	if c.PetsPerBowl == 0 {
		c.PetsPerBowl = 2
	}
	if c.CapacityG == 0 {
		c.CapacityG = 400
	}
	if c.LowG == 0 {
		c.LowG = 60
	}
	if c.EmptyG == 0 {
		c.EmptyG = 5
	}
	if c.LoadCellG == 0 {
		c.LoadCellG = 5000
	}
	if c.ResolutionMg == 0 {
		c.ResolutionMg = 100
	}
	if c.NoiseG == 0 {
		c.NoiseG = 0.1
	}
	if c.TempCoeffGPerC == 0 {
		c.TempCoeffGPerC = tempCoeffGPerC
	}
	if c.DriftGPerHour == 0 {
		c.DriftGPerHour = 0.5
	}
	if c.GlitchesPerHour == 0 {
		c.GlitchesPerHour = 0.5
	}
	if c.SkipRefillChance == 0 {
		c.SkipRefillChance = 0.25
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate checks the config after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Bowls < 1 || c.Bowls > 1000:
		return fmt.Errorf("%w: %d bowls outside 1..1000", ErrConfig, c.Bowls)
	case c.Speed < 0:
		return fmt.Errorf("%w: negative speed %v", ErrConfig, c.Speed)
	case c.FirstMealAfter < 0:
		return fmt.Errorf("%w: negative first meal delay %v", ErrConfig, c.FirstMealAfter)
	case c.SampleRateHz < 1 || c.SampleRateHz > frame.MaxSamples:
		return fmt.Errorf("%w: sample rate %d Hz outside 1..%d", ErrConfig, c.SampleRateHz, frame.MaxSamples)
	case c.PetsPerBowl < 1 || c.PetsPerBowl > 4:
		return fmt.Errorf("%w: %d pets per bowl outside 1..4", ErrConfig, c.PetsPerBowl)
	case c.CapacityG <= c.LowG || c.LowG <= c.EmptyG || c.EmptyG < 0:
		return fmt.Errorf("%w: want capacity %v > low %v > empty %v >= 0", ErrConfig, c.CapacityG, c.LowG, c.EmptyG)
	case c.NoiseG < 0 || c.DriftGPerHour < 0 || c.GlitchesPerHour < 0 || c.TempCoeffGPerC < 0:
		return fmt.Errorf("%w: negative noise, drift, temperature coefficient or glitch rate", ErrConfig)
	case c.LoadCellG < c.CapacityG:
		return fmt.Errorf("%w: load cell of %v g below the bowl's capacity %v g", ErrConfig, c.LoadCellG, c.CapacityG)
	case c.ResolutionMg < 1 || c.ResolutionMg > 10_000:
		return fmt.Errorf("%w: resolution %d mg outside 1..10000", ErrConfig, c.ResolutionMg)
	case c.SkipRefillChance < 0 || c.SkipRefillChance > 1:
		return fmt.Errorf("%w: skip-refill chance %v outside 0..1", ErrConfig, c.SkipRefillChance)
	}
	for _, f := range c.Faults {
		if f.Bowl >= c.Bowls || f.Bowl < -1 || f.After < 0 {
			return fmt.Errorf("%w: fault for bowl %d at %v", ErrConfig, f.Bowl, f.After)
		}
	}
	return nil
}
