// Package latency summarises measured durations the same way in every
// benchmark program: nearest-rank percentiles, in milliseconds.
//
// Proving ground: for the benches only, never linked into a product
// (docs/README.md, "The proving ground").
package latency

import (
	"math"
	"slices"
	"time"
)

// Summary is a latency distribution in milliseconds.
type Summary struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Summarize sorts ds in place and returns its nearest-rank percentiles; the
// zero Summary for no samples.
func Summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	slices.Sort(ds)
	return Summary{
		N:   len(ds),
		P50: Millis(Percentile(ds, 50)),
		P90: Millis(Percentile(ds, 90)),
		P99: Millis(Percentile(ds, 99)),
		Max: Millis(ds[len(ds)-1]),
	}
}

// Percentile returns the nearest-rank percentile p (0 < p <= 100) of
// sorted ds: the smallest value with at least p% of the samples at or
// below it.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(float64(len(sorted))*p/100)) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Millis is d in milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
