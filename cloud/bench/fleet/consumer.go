package main

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/eventsource"
)

// consumerCounts observes the consumer (durable.Observer).
type consumerCounts struct {
	durable.NopObserver
	records, samples, duplicates, rejected, acksOK, acksFailed, gaps atomic.Int64
	stateWrites, rollupWrites                                        atomic.Int64
}

var _ durable.Observer = (*consumerCounts)(nil)

func (c *consumerCounts) Record(string)                 { c.records.Add(1) }
func (c *consumerCounts) Samples(n int)                 { c.samples.Add(int64(n)) }
func (c *consumerCounts) Duplicates(n int)              { c.duplicates.Add(int64(n)) }
func (c *consumerCounts) Rejected(durable.Reason, bool) { c.rejected.Add(1) }
func (c *consumerCounts) GapRaised()                    { c.gaps.Add(1) }
func (c *consumerCounts) StateWrite(string)             { c.stateWrites.Add(1) }
func (c *consumerCounts) RollupWrite(string)            { c.rollupWrites.Add(1) }
func (c *consumerCounts) Ack(outcome string) {
	if outcome == "ok" {
		c.acksOK.Add(1)
	} else {
		c.acksFailed.Add(1)
	}
}

// lagRecorder keeps, per record handled, the time from its arrival in the
// stream to the end of the handler call that took it.
type lagRecorder struct {
	mu      sync.Mutex
	lags    []time.Duration
	handled map[string]bool // sequence numbers handled at least once
	last    []ageRead       // handled time and age of each batch's oldest record
}

func (l *lagRecorder) observe(recs []eventsource.Record, failedFrom string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handled == nil {
		l.handled = map[string]bool{}
	}
	var oldest time.Duration
	for _, r := range recs {
		if failedFrom != "" && r.SequenceNumber == failedFrom {
			break
		}
		lag := now.Sub(r.ArrivalTime)
		oldest = max(oldest, lag)
		if !l.handled[r.SequenceNumber] {
			l.handled[r.SequenceNumber] = true
			l.lags = append(l.lags, lag)
		}
	}
	l.last = append(l.last, ageRead{at: now, behind: oldest})
}

// summary returns the lag's p50, p99 and max over records, how many
// records were handled, and the largest age of a batch handled since
// since (Lambda's IteratorAge at the end).
func (l *lagRecorder) summary(since time.Time) (p50, p99, worst time.Duration, records int, ageAtEnd time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.lags)
	slices.Sort(s)
	if n := len(s); n > 0 {
		p50, p99, worst = s[n/2], s[min(n-1, n*99/100)], s[n-1]
	}
	for _, r := range l.last {
		if !r.at.Before(since) {
			ageAtEnd = max(ageAtEnd, r.behind)
		}
	}
	return p50, p99, worst, len(s), ageAtEnd
}
