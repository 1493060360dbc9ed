package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

func TestLimiterHalvesOnOverloadAndGrowsBack(t *testing.T) {
	var seen []int
	l := newLimiter(8, time.Second, func(n int) { seen = append(seen, n) })
	l.outcome(true, true)
	l.outcome(true, false)
	if l.limit != 2 || l.timeout != 2*time.Second {
		t.Fatalf("after two overloads limit %d timeout %v; want 2 and 2s (doubled once, by the timeout)", l.limit, l.timeout)
	}
	for range 3 {
		l.outcome(true, true)
	}
	if l.limit != 1 || l.timeout != 8*time.Second {
		t.Fatalf("after more overloads limit %d timeout %v; want 1 and 8s (floor 1, timeout capped at 8x)", l.limit, l.timeout)
	}
	l.outcome(false, false)
	if l.timeout != time.Second {
		t.Errorf("a clean call left the timeout at %v; want it reset to 1s", l.timeout)
	}
	for range increaseAfter*1 - 1 {
		l.outcome(false, false)
	}
	if l.limit != 2 {
		t.Errorf("after %d clean calls at limit 1 the limit is %d; want 2", increaseAfter, l.limit)
	}
	if want := []int{8, 4, 2, 1, 2}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("observed limits %v; want %v", seen, want)
	}
}

func TestOverloadClassifiesErrors(t *testing.T) {
	for _, c := range []struct {
		err                  error
		overloaded, timedOut bool
	}{
		{context.DeadlineExceeded, true, true},
		{fmt.Errorf("put: %w", context.DeadlineExceeded), true, true},
		{&smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Fault: smithy.FaultClient}, true, false},
		{&smithy.GenericAPIError{Code: "InternalFailure", Fault: smithy.FaultServer}, true, false},
		{&smithy.GenericAPIError{Code: "ValidationException", Fault: smithy.FaultClient}, false, false},
		{errors.New("connection refused"), true, false},
	} {
		o, to := overload(c.err)
		if o != c.overloaded || to != c.timedOut {
			t.Errorf("overload(%v) = %v, %v; want %v, %v", c.err, o, to, c.overloaded, c.timedOut)
		}
	}
}

// busyKinesis is an endpoint that serves one call at a time, in arrival
// order, taking service per call, as a busy single-threaded kinesis-local
// does. A caller that gives up does not take its call back: the endpoint
// still writes it later, so every timed-out call is wasted work and, once
// retried, a duplicate.
type busyKinesis struct {
	service  time.Duration
	server   sync.Mutex
	calls    atomic.Int64
	timedOut atomic.Int64
	stored   atomic.Int64
}

func (b *busyKinesis) PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	b.calls.Add(1)
	served := make(chan struct{})
	go func() {
		b.server.Lock()
		defer b.server.Unlock()
		time.Sleep(b.service)
		b.stored.Add(int64(len(in.Records)))
		close(served)
	}()
	select {
	case <-served:
		return &kinesis.PutRecordsOutput{Records: make([]types.PutRecordsResultEntry, len(in.Records))}, nil
	case <-ctx.Done():
		b.timedOut.Add(1)
		return nil, ctx.Err()
	}
}

// Against an endpoint that serves one call at a time and still writes
// what callers gave up on, the producer backs down instead of retrying at
// full concurrency: few calls time out and few records are written twice.
// With a fixed limit of 8 calls the queue outgrows the timeout, nearly
// every call times out and is sent again (a retry storm).
func TestProducerBacksOffAnOverloadedEndpoint(t *testing.T) {
	b := &busyKinesis{service: 3 * time.Millisecond}
	p, err := NewProducer(b, ProducerConfig{
		Stream: "s", MaxRecords: 10, MaxInFlight: 8, Linger: time.Millisecond,
		CallTimeout: 10 * time.Millisecond, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 600
	out := newOutcomes(n)
	for i := range n {
		if err := p.Put(t.Context(), "thing", []byte(fmt.Sprintf("r%d", i)), out.done(i)); err != nil {
			t.Fatal(err)
		}
	}
	// A retry storm never drains: give up after a generous guard and
	// report what was stored.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v (the producer did not drain: a retry storm)", err)
	}
	out.all.Wait()
	if len(out.err) > 0 || len(out.ok) != n {
		t.Fatalf("%d records stored, %d failed (%v); want all %d stored", len(out.ok), len(out.err), out.err, n)
	}
	b.server.Lock() // let abandoned calls finish writing
	b.server.Unlock()
	calls, timedOut, stored := b.calls.Load(), b.timedOut.Load(), b.stored.Load()
	t.Logf("%d calls, %d timed out, %d records written for %d", calls, timedOut, stored, n)
	if stored > n*3/2 {
		t.Errorf("%d records written for %d; want under 1.5x (the producer must back off, not resend at full concurrency)", stored, n)
	}
}
