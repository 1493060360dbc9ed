package eventsource

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// round hands over one shard's records: split into
// Spec.ParallelizationFactor sub-streams by partition key, each handled in
// order in batches of Spec.BatchSize, the sub-streams at once. It returns
// when every batch is handled or described on the on-failure queue (nil),
// or when ctx ends.
func (r *Runner) round(ctx context.Context, shard string, recs []ktypes.Record) error {
	n := r.cfg.Spec.ParallelizationFactor
	subs := make([][]Record, n)
	for _, rec := range recs {
		key := aws.ToString(rec.PartitionKey)
		i := 0
		if n > 1 {
			h := fnv.New32a()
			h.Write([]byte(key))
			i = int(h.Sum32() % uint32(n))
		}
		subs[i] = append(subs[i], Record{
			Data: rec.Data, PartitionKey: key, SequenceNumber: aws.ToString(rec.SequenceNumber),
			ShardID: shard, ArrivalTime: aws.ToTime(rec.ApproximateArrivalTimestamp),
		})
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, sub := range subs {
		if len(sub) == 0 {
			continue
		}
		wg.Go(func() {
			for batch := range slices.Chunk(sub, r.cfg.Spec.BatchSize) {
				if err := r.deliver(ctx, shard, batch); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pending is a batch still to be handled and the failed invocations
// counted against MaximumRetryAttempts.
type pending struct {
	recs    []Record
	retries int
	invokes int
}

// deliver hands one batch to the handler until it is done: bisected when
// an invocation fails (bisecting is not a retry), retried from the
// reported sequence number on a partial failure, and given up to the
// on-failure queue after MaximumRetryAttempts retries, or at once when a
// record is older than MaximumRecordAgeInSeconds. It returns only nil, or
// ctx's error.
func (r *Runner) deliver(ctx context.Context, shard string, batch []Record) error {
	spec := r.cfg.Spec
	queue := []pending{{recs: batch}}
	lastErr := ""
	for len(queue) > 0 {
		p := queue[0]
		if r.tooOld(p.recs) {
			if err := r.sendFailure(ctx, r.failureRecord(shard, p.recs, ConditionRecordAgeExceeded, p.invokes, lastErr)); err != nil {
				return err
			}
			queue = queue[1:]
			continue
		}
		failedFrom, err := r.invoke(ctx, p.recs)
		p.invokes++
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil && (failedFrom == "" || !spec.ReportsItemFailures()) {
			queue = queue[1:]
			continue
		}
		rest := p.recs
		if err == nil {
			i := slices.IndexFunc(p.recs, func(rec Record) bool { return rec.SequenceNumber == failedFrom })
			if i < 0 {
				err = fmt.Errorf("reported failure at seq %s, which is not in the batch: %w", failedFrom, ErrUnknownItem)
			} else {
				rest = p.recs[i:]
				lastErr = "partial batch failure from seq " + failedFrom
			}
		}
		if err != nil {
			lastErr = err.Error()
			if spec.BisectBatchOnFunctionError && len(p.recs) > 1 {
				h := len(p.recs) / 2
				r.log.Info("batch failed; bisecting", "shard", shard, "records", len(p.recs), "err", err)
				queue = append([]pending{{recs: p.recs[:h], retries: p.retries}, {recs: p.recs[h:], retries: p.retries}}, queue[1:]...)
				continue
			}
		}
		p.recs, p.retries = rest, p.retries+1
		if spec.MaximumRetryAttempts >= 0 && p.retries > spec.MaximumRetryAttempts {
			if err := r.sendFailure(ctx, r.failureRecord(shard, p.recs, ConditionRetryAttemptsExhausted, p.invokes, lastErr)); err != nil {
				return err
			}
			queue = queue[1:]
			continue
		}
		queue[0] = p
		r.log.Warn("batch failed; retrying", "shard", shard, "from_seq", p.recs[0].SequenceNumber,
			"records", len(p.recs), "retry", p.retries, "err", lastErr)
		if err := r.cfg.Retry.Wait(ctx, p.retries-1); err != nil {
			return err
		}
	}
	return nil
}

// tooOld reports whether a record of recs is past MaximumRecordAgeInSeconds.
func (r *Runner) tooOld(recs []Record) bool {
	age := r.cfg.Spec.MaximumRecordAgeInSeconds
	if age < 0 {
		return false
	}
	limit := r.cfg.Now().Add(-time.Duration(age) * time.Second)
	return slices.ContainsFunc(recs, func(rec Record) bool { return !rec.ArrivalTime.IsZero() && rec.ArrivalTime.Before(limit) })
}

// invoke calls the handler with the invocation deadline; a panic is an
// invocation error, as a crashed function is in Lambda.
func (r *Runner) invoke(ctx context.Context, recs []Record) (failedFrom string, err error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.InvokeTimeout)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			failedFrom, err = "", fmt.Errorf("handler panicked: %v: %w", v, ErrHandlerPanic)
		}
	}()
	return r.cfg.Handler(ctx, slices.Clone(recs))
}
