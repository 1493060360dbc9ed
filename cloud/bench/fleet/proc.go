package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// procSample is what /proc says of one process (and, for this process,
// the Go runtime): memory now and at its peak, open file descriptors and
// CPU time used so far.
type procSample struct {
	Pid        int
	RSSMiB     float64 // VmRSS at the end
	PeakRSSMiB float64 // VmHWM
	FDs        int
	PeakFDs    int
	CPUSeconds float64 // user + system
	// Go runtime figures, for a Go process measuring itself.
	HeapMiB     float64 `json:",omitempty"` // HeapAlloc at the end
	PeakHeapMiB float64 `json:",omitempty"`
	Goroutines  int     `json:",omitempty"`
}

// readProc reads pid's memory, descriptors and CPU time; zero values when
// the process is gone.
func readProc(pid int) procSample {
	s := procSample{Pid: pid}
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	if b, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			f := strings.Fields(v)
			if len(f) == 0 {
				continue
			}
			kb, _ := strconv.ParseFloat(f[0], 64)
			switch k {
			case "VmRSS":
				s.RSSMiB = kb / 1024
			case "VmHWM":
				s.PeakRSSMiB = kb / 1024
			}
		}
	}
	if es, err := os.ReadDir(filepath.Join(dir, "fd")); err == nil {
		s.FDs = len(es)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "stat")); err == nil {
		// Fields after the command's closing parenthesis: utime and stime
		// are the 12th and 13th (fields 14 and 15 of proc(5)).
		if i := strings.LastIndexByte(string(b), ')'); i > 0 {
			f := strings.Fields(string(b)[i+1:])
			if len(f) > 12 {
				u, _ := strconv.ParseFloat(f[11], 64)
				st, _ := strconv.ParseFloat(f[12], 64)
				s.CPUSeconds = (u + st) / clockTicks
			}
		}
	}
	return s
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// procSampler samples one process every few seconds to find its peaks.
type procSampler struct {
	mu       sync.Mutex
	pid      int
	self     bool
	peakFDs  int
	peakHeap uint64
	cancel   context.CancelFunc
	done     chan struct{}
}

func (p *procSampler) start(ctx context.Context, pid int, self bool) {
	p.pid, p.self, p.done = pid, self, make(chan struct{})
	ctx, p.cancel = context.WithCancel(ctx)
	go func() {
		defer close(p.done)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			p.sample()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

func (p *procSampler) sample() procSample {
	s := readProc(p.pid)
	var heap uint64
	if p.self {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		heap = m.HeapAlloc
		s.HeapMiB, s.Goroutines = float64(heap)/(1<<20), runtime.NumGoroutine()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peakFDs, p.peakHeap = max(p.peakFDs, s.FDs), max(p.peakHeap, heap)
	s.PeakFDs, s.PeakHeapMiB = p.peakFDs, float64(p.peakHeap)/(1<<20)
	return s
}

// stop ends the sampling and returns the last sample with the peaks.
func (p *procSampler) stop() procSample {
	if p.cancel == nil {
		return procSample{}
	}
	p.cancel()
	<-p.done
	return p.sample()
}
