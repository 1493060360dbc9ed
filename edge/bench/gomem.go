package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// goMemory is the agent's Go runtime view of its memory, read from its
// /metrics: what the heap holds live, what it keeps idle, and what it has
// given back to the OS. RssAnon is roughly HeapInuse + (HeapIdle -
// HeapReleased) + stacks and runtime.
type goMemory struct {
	HeapInuseMB    float64 `json:"heap_inuse_mb"`
	HeapIdleMB     float64 `json:"heap_idle_mb"`
	HeapReleasedMB float64 `json:"heap_released_mb"`
	NextGCMB       float64 `json:"next_gc_mb"`
	SysMB          float64 `json:"sys_mb"`
}

// scrapeGoMemory reads go_memstats_* from a Prometheus text endpoint.
func scrapeGoMemory(ctx context.Context, url string) (goMemory, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return goMemory{}, fmt.Errorf("metrics %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return goMemory{}, fmt.Errorf("metrics %s: %w", url, err)
	}
	defer resp.Body.Close()
	var g goMemory
	fields := map[string]*float64{
		"go_memstats_heap_inuse_bytes":    &g.HeapInuseMB,
		"go_memstats_heap_idle_bytes":     &g.HeapIdleMB,
		"go_memstats_heap_released_bytes": &g.HeapReleasedMB,
		"go_memstats_next_gc_bytes":       &g.NextGCMB,
		"go_memstats_sys_bytes":           &g.SysMB,
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if dst := fields[name]; ok && dst != nil {
			v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil {
				return goMemory{}, fmt.Errorf("metrics %s: line %q: %w", url, sc.Text(), err)
			}
			*dst = v / (1 << 20)
		}
	}
	if err := sc.Err(); err != nil {
		return goMemory{}, fmt.Errorf("metrics %s: %w", url, err)
	}
	return g, nil
}
