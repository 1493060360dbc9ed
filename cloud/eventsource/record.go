package eventsource

import (
	"context"
	"time"
)

// Record is one Kinesis record as a Handler sees it. The fields are those
// of cloud/durable's Record, so the composition root converts one to the
// other field by field.
type Record struct {
	Data           []byte
	PartitionKey   string
	SequenceNumber string
	ShardID        string
	ArrivalTime    time.Time // the record's ApproximateArrivalTimestamp
}

// Handler handles one batch, all of one shard (and of one sub-stream), in
// sequence order. It returns:
//
//   - "", nil: every record is done; the batch is checkpointed.
//   - seq, nil: the records before seq are done, seq and every later
//     record of the batch are to be handed over again (Lambda's
//     batchItemFailures with the lowest failed sequence number). A seq
//     that is not in the batch fails the whole batch.
//   - err: the whole batch failed and is retried (an invocation error).
//
// A Handler is called for one batch at a time per sub-stream, but for
// several sub-streams and shards at once: it must be safe for concurrent
// use. It should honour ctx, which carries the invocation deadline.
type Handler func(ctx context.Context, recs []Record) (failedFrom string, err error)
