package main

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime runs f on one locked OS thread and returns the CPU time that
// thread spent in it (CLOCK_THREAD_CPUTIME_ID): the CPU f needs, without
// the time it waited for a core, so the compute line does not grow with
// the load of the machine the bench runs on. It falls back to wall time
// if the clock cannot be read.
func cpuTime(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &a); err != nil {
		start := time.Now()
		f()
		return time.Since(start)
	}
	f()
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &b); err != nil {
		return 0
	}
	return time.Duration(b.Nano() - a.Nano())
}
