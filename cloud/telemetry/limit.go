package telemetry

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/smithy-go"
)

// limiter adapts how many PutRecords calls the producer has in flight, the
// way TCP adapts its window (AIMD): every overload signal (a call that
// timed out, a throttling error, records refused with
// ProvisionedThroughputExceededException) halves the limit; every
// increaseAfter*limit clean calls raise it by one, up to MaxInFlight. A
// call that timed out also doubles the next call's timeout (up to
// maxTimeoutFactor times CallTimeout), since the stream may still be
// writing what the abandoned call sent: retrying it sooner only adds load
// and duplicates. A clean call resets the timeout.
//
// On AWS the signal is throttling of a shard's 1 MB/s or 1,000 records/s
// write limit; locally it is kinesis-local slowing down on a busy machine.
// Either way the producer backs off instead of feeding a retry storm.
type limiter struct {
	mu       sync.Mutex
	max      int
	limit    int
	inflight int
	clean    int // clean calls since the limit last changed
	base     time.Duration
	timeout  time.Duration
	changed  chan struct{} // closed and replaced whenever a slot frees
	observe  func(limit int)
}

const (
	increaseAfter    = 8 // clean calls per unit of limit before it grows
	maxTimeoutFactor = 8
)

func newLimiter(max int, callTimeout time.Duration, observe func(int)) *limiter {
	if observe == nil {
		observe = func(int) {}
	}
	l := &limiter{max: max, limit: max, base: callTimeout, timeout: callTimeout, changed: make(chan struct{}), observe: observe}
	observe(max)
	return l
}

// tryAcquire takes a slot if fewer than limit calls are in flight; when it
// cannot, wait is closed once one may be free.
func (l *limiter) tryAcquire() (ok bool, wait <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight < l.limit {
		l.inflight++
		return true, nil
	}
	return false, l.changed
}

// acquire waits for a slot; false when ctx ends first.
func (l *limiter) acquire(ctx context.Context) bool {
	for {
		ok, wait := l.tryAcquire()
		if ok {
			return true
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return false
		}
	}
}

// release gives a slot back.
func (l *limiter) release() {
	l.mu.Lock()
	l.inflight--
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// callTimeout is the timeout of the next call.
func (l *limiter) callTimeout() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.timeout
}

// outcome records how a call went: overloaded (timed out or throttled),
// timedOut, or clean.
func (l *limiter) outcome(overloaded, timedOut bool) {
	l.mu.Lock()
	before := l.limit
	switch {
	case overloaded:
		l.limit = max(1, l.limit/2)
		l.clean = 0
		if timedOut {
			l.timeout = min(2*l.timeout, maxTimeoutFactor*l.base)
		}
	default:
		l.timeout = l.base
		l.clean++
		if l.clean >= increaseAfter*l.limit && l.limit < l.max {
			l.limit++
			l.clean = 0
		}
	}
	after := l.limit
	if after > before {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	l.mu.Unlock()
	if after != before {
		l.observe(after)
	}
}

// throttleCodes are the Kinesis error codes that mean "slow down".
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"LimitExceededException":                 true,
	"KMSThrottlingException":                 true,
	"ThrottlingException":                    true,
}

// overload classifies a failed call: overloaded is true for timeouts,
// throttling and server errors (anything that more load makes worse),
// timedOut for a call that ran out of time.
func overload(err error) (overloaded, timedOut bool) {
	if errors.Is(err, context.DeadlineExceeded) {
		return true, true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return throttleCodes[api.ErrorCode()] || api.ErrorFault() == smithy.FaultServer, false
	}
	// Connection errors: the endpoint is down or refusing.
	return true, false
}
