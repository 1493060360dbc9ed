package outbox

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// BenchmarkAppendDurable measures samples made durable per second (group
// commit, fsync on): 4 bowls appending batches of 50 samples concurrently,
// as bridges do. Report: samples/s.
func BenchmarkAppendDurable(b *testing.B) {
	for _, batch := range []int{1, 50} {
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
