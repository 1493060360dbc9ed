package forward

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/outbox"
)

// BenchmarkForwardToLoopbackBroker measures samples/s forwarded from a
// durable outbox (fsync on) to an embedded broker on 127.0.0.1 and
// acknowledged (PUBACK, then removed from the outbox), for 4 bowls, with
// the default window (100) and batch size (1000 samples) and the rate limit
// lifted (the AWS IoT default of 100 msg/s would cap it at 100,000
// samples/s).
func BenchmarkForwardToLoopbackBroker(b *testing.B) {
	ctx := context.Background()
	o, err := outbox.Open(outbox.Config{Path: filepath.Join(b.TempDir(), "outbox.db"), MaxBytes: 8 << 30, TelemetryTTL: -1, Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	things := []string{"bowl-1", "bowl-2", "bowl-3", "bowl-4"}
	total := b.N
	for i := 0; i < total; i += 1000 {
		th := things[(i/1000)%len(things)]
		if err := o.Append(ctx, telemetry(th, min(1000, total-i), 20*time.Millisecond), nil); err != nil {
			b.Fatal(err)
		}
	}
	br := startBroker(b, nil)
	f, err := New(Config{Broker: br.URL, Tenant: "t1", ClientID: "gw-bench", Wire: WireV1, Rate: 1e9, Logger: testLogger(b)}, o)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(rctx) }()
	for {
		s, _ := o.Stats()
		if s.Telemetry.Records == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	el := time.Since(start)
	cancel()
	<-done
	b.ReportMetric(float64(total)/el.Seconds(), "samples/s")
}
