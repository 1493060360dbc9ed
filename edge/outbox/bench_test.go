package outbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkAppendDurable measures samples made durable per second (group
// commit, fsync on): 4 bowls appending batches of 50 samples concurrently,
// as bridges do. Report: samples/s.
func BenchmarkAppendDurable(b *testing.B) {
	for _, batch := range []int{1, 50, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			o, err := Open(Config{Path: filepath.Join(b.TempDir(), "outbox.db"), MaxBytes: 8 << 30, Logger: testLogger(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			const writers = 16
			per := make([][]Entry, writers)
			for w := range per {
				per[w] = samples(fmt.Sprintf("bowl-%d", w%4), batch, time.Now())
			}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			n := b.N
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < n; i += writers {
						if err := o.Append(ctx, per[w], nil); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "samples/s")
		})
	}
}

// BenchmarkBacklogRSS appends a backlog of 1,000,000 samples (4 bowls, in
// deliveries of 500), then walks it in 1000-sample batches as the forwarder
// does, and reports the process's resident set (VmRSS, MB) and the file
// size. One iteration is the whole backlog; run with -benchtime 1x.
func BenchmarkBacklogRSS(b *testing.B) {
	ctx := context.Background()
	for range b.N {
		o, err := Open(Config{Path: filepath.Join(b.TempDir(), "outbox.db"), MaxBytes: 8 << 30, TelemetryTTL: -1, Logger: testLogger(b)})
		if err != nil {
			b.Fatal(err)
		}
		const total = 1_000_000
		for i := 0; i < total; i += 500 {
			if err := o.Append(ctx, samples(fmt.Sprintf("bowl-%d", (i/500)%4), 500, time.Now()), nil); err != nil {
				b.Fatal(err)
			}
		}
		read := 0
		for w := range 4 {
			var from uint64
			for {
				bt, ok, err := o.TelemetryBatch(ctx, fmt.Sprintf("bowl-%d", w), from, BatchLimit{MaxSamples: 1000})
				if err != nil {
					b.Fatal(err)
				}
				if !ok {
					break
				}
				read += len(bt.Samples)
				from = bt.Last + 1
			}
		}
		if read != total {
			b.Fatalf("walked %d samples; want %d", read, total)
		}
		s, _ := o.Stats()
		b.ReportMetric(float64(rssKB())/1024, "rss_MB")
		b.ReportMetric(float64(s.FileBytes)/(1<<20), "file_MB")
		o.Close()
	}
}

// rssKB reads VmRSS from /proc/self/status (0 where there is none).
func rssKB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
