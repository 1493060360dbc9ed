package dev

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/worker"
)

// Figures are the live counters of a run, as the status line shows them.
type Figures struct {
	// At is the wall time of the figures; SimTime the bowls' clock then.
	At      time.Time `json:"at"`
	SimTime time.Time `json:"sim_time,omitzero"`
	// Samples and TelemetryMessages are the new samples and the records
	// the telemetry consumer read from the stream.
	Samples           int64 `json:"samples_to_kinesis"`
	TelemetryMessages int64 `json:"telemetry_messages"`
	// Emitted device events; Duplicates are MQTT redeliveries that emitted
	// nothing; Rejected messages were dead-lettered by ingest.
	Emitted    int64 `json:"events_emitted"`
	Duplicates int64 `json:"event_duplicates"`
	Rejected   int64 `json:"rejected"`
	// Completed and Dead count DURABLE deliveries (event, subscription)
	// by outcome; Retried the retryable failures left to SQS.
	Completed int64 `json:"deliveries_completed"`
	Retried   int64 `json:"deliveries_retried"`
	Dead      int64 `json:"deliveries_dead"`
	// ChainsIntact of ChainsChecked tenants verified at ChainsAt (the
	// chain check runs in the background; see chainWatch).
	ChainsIntact  int       `json:"chains_intact"`
	ChainsChecked int       `json:"chains_checked"`
	ChainsAt      time.Time `json:"chains_checked_at,omitzero"`
	// DLQDepth is the events dead-letter queue's approximate depth, -1 when
	// it could not be read.
	DLQDepth int `json:"dlq_depth"`
}

// counters are the status figures, fed by ingest's and the worker's
// observers. All fields are atomics: observers must not block.
type counters struct {
	samples, telemetry, emitted, duplicates, rejected atomic.Int64
	completed, retried, dead                          atomic.Int64
}

func (c *counters) ingest() ingest.Observer { return ingestCounter{c: c} }
func (c *counters) worker() worker.Observer { return workerCounter{c: c} }

type ingestCounter struct {
	ingest.NopObserver
	c *counters
}

func (i ingestCounter) Rejected(string, ingest.Reason) { i.c.rejected.Add(1) }
func (i ingestCounter) Emitted(string)                 { i.c.emitted.Add(1) }
func (i ingestCounter) Duplicate(string)               { i.c.duplicates.Add(1) }

// consumer observes the telemetry consumer: its metrics, and the status
// line's samples and records in the stream.
func (c *counters) consumer(m *durable.Metrics) durable.Observer { return consumerCounter{m, c} }

type consumerCounter struct {
	*durable.Metrics
	c *counters
}

func (o consumerCounter) Record(format string) { o.Metrics.Record(format); o.c.telemetry.Add(1) }
func (o consumerCounter) Samples(n int)        { o.Metrics.Samples(n); o.c.samples.Add(int64(n)) }

type workerCounter struct {
	worker.NopObserver
	c *counters
}

func (w workerCounter) DeadLetter(string) { w.c.dead.Add(1) }
func (w workerCounter) Handled(_, outcome string, _ time.Duration) {
	switch outcome {
	case worker.HandledOK:
		w.c.completed.Add(1)
	case worker.HandledRetry:
		w.c.retried.Add(1)
	}
}

var _ worker.Observer = workerCounter{}
var _ ingest.Observer = ingestCounter{}

// ChainVerifier verifies tenants' chains (*engine.Verifier).
type ChainVerifier interface {
	Tenants(ctx context.Context) ([]string, error)
	VerifyChain(ctx context.Context, tenant string) (engine.ChainReport, error)
}

// chainWatch verifies every tenant's chain in the background, one pass at
// a time, and keeps the latest result: a full verification reads every
// event, so the status line shows the last finished pass instead of
// paying for one per line.
type chainWatch struct {
	v ChainVerifier

	mu              sync.Mutex
	intact, checked int
	at              time.Time
}

// run verifies in passes, pausing every between them, until ctx ends.
func (w *chainWatch) run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		intact, checked, err := w.pass(ctx)
		if err == nil {
			w.mu.Lock()
			w.intact, w.checked, w.at = intact, checked, time.Now()
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (w *chainWatch) pass(ctx context.Context) (intact, checked int, err error) {
	tenants, err := w.v.Tenants(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, t := range tenants {
		rep, err := w.v.VerifyChain(ctx, t)
		if err != nil {
			return 0, 0, err
		}
		checked++
		if rep.Intact {
			intact++
		}
	}
	return intact, checked, nil
}

func (w *chainWatch) latest() (intact, checked int, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.intact, w.checked, w.at
}

// DLQ is the part of SQS the status line reads.
type DLQ interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// dlqDepth reads the queue's visible plus in-flight messages: one call.
func dlqDepth(ctx context.Context, q DLQ, url string) (int, error) {
	out, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return 0, fmt.Errorf("dlq depth of %s: %w", url, err)
	}
	n := 0
	for _, k := range []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		v, _ := strconv.Atoi(out.Attributes[string(k)])
		n += v
	}
	return n, nil
}

// Figures returns the live figures: counters, the latest chain pass and
// the DLQ depth (one SQS call, bounded by a short timeout).
func (s *System) Figures(ctx context.Context) Figures {
	c := &s.counters
	f := Figures{
		At: time.Now(), Samples: c.samples.Load(), TelemetryMessages: c.telemetry.Load(),
		Emitted: c.emitted.Load(), Duplicates: c.duplicates.Load(), Rejected: c.rejected.Load(),
		Completed: c.completed.Load(), Retried: c.retried.Load(), Dead: c.dead.Load(),
	}
	if s.clock != nil {
		f.SimTime = s.clock.Now()
	}
	f.ChainsIntact, f.ChainsChecked, f.ChainsAt = s.chains.latest()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	d, err := dlqDepth(ctx, s.app.Part(app.PartDev).SQS, s.dlqURL)
	if err != nil {
		s.cfg.Logger.Warn("status line", "err", err)
		d = -1
	}
	f.DLQDepth = d
	return f
}

// Line formats f as the one-line status.
func (f Figures) Line() string {
	sim := ""
	if !f.SimTime.IsZero() {
		sim = " sim " + f.SimTime.UTC().Format("2006-01-02 15:04")
	}
	chains := "chains -"
	if !f.ChainsAt.IsZero() {
		chains = fmt.Sprintf("chains %d/%d intact", f.ChainsIntact, f.ChainsChecked)
	}
	dlq := "dlq ?"
	if f.DLQDepth >= 0 {
		dlq = fmt.Sprintf("dlq %d", f.DLQDepth)
	}
	return fmt.Sprintf("%s%s | samples->kinesis %d (%d msgs) | events emitted %d (dup %d, rejected %d) | deliveries ok %d, retried %d, dead %d | %s | %s",
		f.At.Format("15:04:05"), sim, f.Samples, f.TelemetryMessages, f.Emitted, f.Duplicates, f.Rejected,
		f.Completed, f.Retried, f.Dead, chains, dlq)
}

// JSON formats f as one JSON line.
func (f Figures) JSON() string {
	b, _ := json.Marshal(f)
	return string(b)
}
