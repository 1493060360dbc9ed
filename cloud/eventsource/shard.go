package eventsource

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/bowline-iot/bowline/internal/backoff"
)

// readShard hands one shard over from its checkpoint to its end (nil) or
// until ctx ends. Records are gathered until a round is full
// (BatchSize per sub-stream), the batching window has passed since the
// first of them arrived here, or the shard ended; the round is handled,
// then checkpointed.
func (r *Runner) readShard(ctx context.Context, shard string) error {
	log := r.log.With("shard", shard)
	cp, err := r.cps.load(ctx, shard)
	if err != nil {
		return err
	}
	if cp.Closed {
		return nil
	}
	iter, err := r.iterator(ctx, shard, cp.Sequence)
	if err != nil {
		return err
	}
	roundSize := min(r.cfg.Spec.BatchSize*r.cfg.Spec.ParallelizationFactor, maxGetRecordLimit)
	window := time.Duration(r.cfg.Spec.MaximumBatchingWindowInSeconds) * time.Second
	var buf []ktypes.Record
	var first time.Time
	for failures := 0; iter != ""; {
		out, err := r.cfg.Kinesis.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String(iter), Limit: aws.Int32(int32(roundSize - len(buf)))})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var expired *ktypes.ExpiredIteratorException
			var throttled *ktypes.ProvisionedThroughputExceededException
			var gone *ktypes.ResourceNotFoundException
			switch {
			case errors.As(err, &gone):
				log.Warn("shard is gone", "err", err)
				return nil
			case errors.As(err, &expired):
				log.Info("shard iterator expired; renewing from the checkpoint", "seq", cp.Sequence)
			case errors.As(err, &throttled):
				failures++
				log.Warn("get records throttled; slowing down", "err", err)
			default:
				failures++
				log.Warn("get records failed; retrying", "err", err)
			}
			if err := r.cfg.Retry.Wait(ctx, failures); err != nil {
				return err
			}
			// What was gathered but not handled is read again.
			buf = nil
			if iter, err = r.iterator(ctx, shard, cp.Sequence); err != nil {
				return err
			}
			continue
		}
		failures = 0
		bytes := 0
		for _, rec := range out.Records {
			bytes += len(rec.Data) + len(aws.ToString(rec.PartitionKey))
		}
		if len(buf) == 0 && len(out.Records) > 0 {
			first = time.Now()
		}
		buf = append(buf, out.Records...)
		closed := out.NextShardIterator == nil
		if len(buf) > 0 && (len(buf) >= roundSize || closed || time.Since(first) >= window) {
			if err := r.round(ctx, shard, buf); err != nil {
				return err
			}
			cp.Sequence = aws.ToString(buf[len(buf)-1].SequenceNumber)
			if err := r.saveCheckpoint(ctx, shard, cp); err != nil {
				return err
			}
			buf = nil
		}
		if closed {
			break
		}
		iter = *out.NextShardIterator
		gap := r.readGap(bytes, len(out.Records))
		if len(buf) > 0 {
			// Records are waiting: read again when their window ends, not
			// a whole poll interval later.
			gap = max(minReadGap, min(gap, window-time.Since(first)))
		}
		if err := backoff.Sleep(ctx, gap); err != nil {
			return err
		}
	}
	cp.Closed = true
	log.Info("shard closed and fully handled", "seq", cp.Sequence)
	return r.saveCheckpoint(ctx, shard, cp)
}

// readGap is the pause before the next GetRecords of a shard: at least a
// fifth of a second (five reads per second), bytes at 2 MB/s, and the
// poll interval after an empty read.
func (r *Runner) readGap(bytes, records int) time.Duration {
	gap := max(minReadGap, time.Duration(bytes)*time.Second/shardBytesPerSec)
	if records == 0 {
		gap = max(gap, r.cfg.PollInterval)
	}
	return gap
}

// saveCheckpoint retries until the checkpoint is written or ctx ends.
func (r *Runner) saveCheckpoint(ctx context.Context, shard string, cp checkpoint) error {
	for attempt := 0; ; attempt++ {
		err := r.cps.save(ctx, shard, cp)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Warn("save checkpoint failed; retrying", "shard", shard, "err", err)
		if err := r.cfg.Retry.Wait(ctx, attempt); err != nil {
			return err
		}
	}
}

// iterator returns an iterator just after seq, or at the trim horizon when
// seq is empty; "" when the shard no longer exists.
func (r *Runner) iterator(ctx context.Context, shard, seq string) (string, error) {
	for attempt := 0; ; attempt++ {
		in := &kinesis.GetShardIteratorInput{StreamName: aws.String(r.cfg.Stream), ShardId: aws.String(shard), ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon}
		if seq != "" {
			in.ShardIteratorType = ktypes.ShardIteratorTypeAfterSequenceNumber
			in.StartingSequenceNumber = aws.String(seq)
		}
		out, err := r.cfg.Kinesis.GetShardIterator(ctx, in)
		if err == nil {
			return aws.ToString(out.ShardIterator), nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		var gone *ktypes.ResourceNotFoundException
		if errors.As(err, &gone) {
			return "", nil
		}
		r.log.Warn("get shard iterator failed; retrying", "shard", shard, "err", err)
		if err := r.cfg.Retry.Wait(ctx, attempt); err != nil {
			return "", err
		}
	}
}
