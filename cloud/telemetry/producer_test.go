package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/testkit"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

func testLogger(t testing.TB) *slog.Logger { return testkit.Logger(t, slog.LevelWarn) }

// fakeKinesis answers PutRecords in memory; fail decides which records of
// a call are throttled.
type fakeKinesis struct {
	mu    sync.Mutex
	calls []*kinesis.PutRecordsInput
	fail  func(call, i int) bool
}

func (f *fakeKinesis) PutRecords(_ context.Context, in *kinesis.PutRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	f.mu.Lock()
	call := len(f.calls)
	f.calls = append(f.calls, in)
	f.mu.Unlock()
	out := &kinesis.PutRecordsOutput{Records: make([]types.PutRecordsResultEntry, len(in.Records))}
	for i := range in.Records {
		if f.fail != nil && f.fail(call, i) {
			out.Records[i].ErrorCode = aws.String("ProvisionedThroughputExceededException")
			continue
		}
		out.Records[i].SequenceNumber = aws.String(fmt.Sprint(call, "-", i))
	}
	return out, nil
}

// outcomes counts each record's done calls.
type outcomes struct {
	mu  sync.Mutex
	ok  map[int]int
	err map[int]error
	all sync.WaitGroup
}

func newOutcomes(n int) *outcomes {
	o := &outcomes{ok: map[int]int{}, err: map[int]error{}}
	o.all.Add(n)
	return o
}

func (o *outcomes) done(i int) func(error) {
	return func(err error) {
		o.mu.Lock()
		if err == nil {
			o.ok[i]++
		} else {
			o.err[i] = err
		}
		o.mu.Unlock()
		o.all.Done()
	}
}

func TestBatchesRespectKinesisLimits(t *testing.T) {
	fk := &fakeKinesis{fail: func(call, i int) bool { return call%2 == 0 && i%3 == 0 }}
	p, err := NewProducer(fk, ProducerConfig{Stream: "s", Linger: time.Millisecond, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	const small, big = 1200, 12
	o := newOutcomes(small + big)
	ctx := context.Background()
	for i := range small {
		if err := p.Put(ctx, fmt.Sprint("thing-", i%7), []byte(fmt.Sprint(i)), o.done(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range big {
		if err := p.Put(ctx, "thing-big", make([]byte, 900<<10), o.done(small+i)); err != nil {
			t.Fatal(err)
		}
	}
	o.all.Wait()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	for i := range small + big {
		if o.ok[i] != 1 || o.err[i] != nil {
			t.Errorf("record %d: done(nil) %d times, error %v; want accepted once", i, o.ok[i], o.err[i])
		}
	}
	for n, in := range fk.calls {
		bytes := 0
		for _, r := range in.Records {
			bytes += len(r.Data) + len(aws.ToString(r.PartitionKey))
		}
		if len(in.Records) > MaxPutRecords || bytes > MaxPutBytes || aws.ToString(in.StreamName) != "s" {
			t.Errorf("call %d: %d records, %d bytes to %q; want at most %d records, %d bytes to s", n, len(in.Records), bytes, aws.ToString(in.StreamName), MaxPutRecords, MaxPutBytes)
		}
	}
}

func TestCloseAbandonsUnacceptedRecords(t *testing.T) {
	fk := &fakeKinesis{fail: func(int, int) bool { return true }}
	p, err := NewProducer(fk, ProducerConfig{Stream: "s", Linger: time.Millisecond, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	o := newOutcomes(3)
	for i := range 3 {
		if err := p.Put(context.Background(), "k", []byte("x"), o.done(i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close() = %v; want the context's deadline error", err)
	}
	o.all.Wait()
	for i := range 3 {
		if o.ok[i] != 0 || !errors.Is(o.err[i], ErrClosed) {
			t.Errorf("record %d: accepted %d times, error %v; want ErrClosed only", i, o.ok[i], o.err[i])
		}
	}
	if err := p.Put(context.Background(), "k", []byte("x"), func(error) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Put after Close = %v; want ErrClosed", err)
	}
}

func TestPutRefusesWhatKinesisWould(t *testing.T) {
	p, err := NewProducer(&fakeKinesis{}, ProducerConfig{Stream: "s", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	for _, c := range []struct {
		key  string
		size int
	}{{"", 1}, {strings.Repeat("k", 257), 1}, {"k", MaxKinesisRecord}} {
		if err := p.Put(context.Background(), c.key, make([]byte, c.size), func(error) { t.Error("done called for a refused record") }); err == nil {
			t.Errorf("Put(key of %d bytes, %d bytes) = nil; want an error", len(c.key), c.size)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  ProducerConfig
		want string
	}{
		{ProducerConfig{}, "Stream"},
		{ProducerConfig{Stream: "s", MaxRecords: 501}, "MaxRecords"},
		{ProducerConfig{Stream: "s", MaxBytes: 1 << 10}, "MaxBytes"},
		{ProducerConfig{Stream: "s", BackoffBase: time.Second, BackoffMax: time.Millisecond}, "BackoffMax"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v; want an error naming %s", c.cfg, err, c.want)
		}
	}
}

// TestMaxAttemptsGivesUp: with MaxAttempts set, a record Kinesis refuses
// on every call gets ErrRetriesExhausted after exactly that many calls,
// while records accepted on the way get nil; with MaxAttempts 0 the same
// record is retried past it.
func TestMaxAttemptsGivesUp(t *testing.T) {
	for _, max := range []int{1, 3} {
		fk := &fakeKinesis{}
		fk.fail = func(call, i int) bool {
			fk.mu.Lock()
			defer fk.mu.Unlock()
			return aws.ToString(fk.calls[call].Records[i].PartitionKey) == "k0"
		}
		p, err := NewProducer(fk, ProducerConfig{Stream: "s", Linger: time.Millisecond, MaxAttempts: max, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		o := newOutcomes(2)
		// Record 0 (key k0) is refused every time; record 1 is accepted.
		for i := range 2 {
			if err := p.Put(context.Background(), fmt.Sprint("k", i), []byte("x"), o.done(i)); err != nil {
				t.Fatal(err)
			}
		}
		o.all.Wait()
		if err := p.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(o.err[0], ErrRetriesExhausted) {
			t.Errorf("MaxAttempts %d: refused record done(%v); want ErrRetriesExhausted", max, o.err[0])
		}
		if o.ok[1] != 1 {
			t.Errorf("MaxAttempts %d: accepted record done(nil) %d times; want 1", max, o.ok[1])
		}
		calls := 0
		for _, c := range fk.calls {
			for _, r := range c.Records {
				if aws.ToString(r.PartitionKey) == "k0" {
					calls++
				}
			}
		}
		if calls != max {
			t.Errorf("MaxAttempts %d: refused record sent %d times; want %d", max, calls, max)
		}
	}
}
