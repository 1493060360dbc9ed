//go:build !linux

package main

import "time"

// cpuTime returns f's wall time: this platform has no thread CPU clock
// here, so the figure includes any wait for a core (cputime_linux.go).
func cpuTime(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
