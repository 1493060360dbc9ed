//go:build race

package detect_test

// Under the race detector the simulated week shrinks to a day: the
// detector is single-goroutine logic, and the week's 600,000 frames through
// the bridge would take minutes with race instrumentation.
const raceEnabled = true
