package worker

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// maxBatch is SQS's limit of entries per batch call.
const maxBatch = 10

// sqsCallTimeout bounds one delete or visibility call, whatever the
// caller's context.
const sqsCallTimeout = 15 * time.Second

// keep is the heartbeat of the messages this worker holds: every tick it
// extends, in batches, the visibility of each held message (being handled,
// queued behind one of its group, or waiting for its delete) whose
// visibility runs out within the margin, and it abandons the lane of a
// handler that overran MaxRunTime. It returns when stop is closed.
func (w *Worker) keep(stop <-chan struct{}) {
	t := time.NewTicker(w.tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		w.keepOnce(time.Now())
	}
}

func (w *Worker) keepOnce(now time.Time) {
	p := w.pool
	var due []visChange
	p.mu.Lock()
	for _, m := range p.msgs {
		if m.gone || m.running == 0 || !now.After(m.overdueAt) {
			continue
		}
		lost := p.abandonLocked(m.lane, m)
		w.obs.Abandoned(len(lost))
		w.log.Error("handler overran its maximum run time; no longer extending its group's messages, which SQS will redeliver",
			"message_id", m.id, "group", m.group, "max_run_time", w.cfg.MaxRunTime, "messages", len(lost))
	}
	secs := visibilitySeconds(w.visibility)
	for _, m := range p.msgs {
		if !m.gone && m.visibleAt.Sub(now) < w.margin {
			due = append(due, visChange{m: m, receipt: m.receipt, secs: secs})
		}
	}
	p.mu.Unlock()
	if len(due) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sqsCallTimeout)
	defer cancel()
	start := time.Now()
	failed := w.changeVisibility(ctx, due)
	w.obs.Extended(len(due) - len(failed))
	p.mu.Lock()
	for _, c := range due {
		if err, bad := failed[c.m]; bad {
			w.log.Warn("extend visibility failed; SQS may redeliver the message", "message_id", c.m.id, "group", c.m.group, "err", err)
			continue
		}
		if c.m.receipt == c.receipt {
			c.m.visibleAt = start.Add(time.Duration(c.secs) * time.Second)
		}
	}
	p.mu.Unlock()
}

// visChange is one entry of a visibility change: the receipt handle read
// under the pool lock.
type visChange struct {
	m       *message
	receipt string
	secs    int32
}

// visibilitySeconds rounds d up to whole seconds, as SQS takes them.
func visibilitySeconds(d time.Duration) int32 {
	return int32(min(math.Ceil(d.Seconds()), 43200))
}

// changeVisibility sends changes in batches of ten, in order, and returns
// the entries that failed with their error.
func (w *Worker) changeVisibility(ctx context.Context, changes []visChange) map[*message]error {
	failed := map[*message]error{}
	for i := 0; i < len(changes); i += maxBatch {
		chunk := changes[i:min(i+maxBatch, len(changes))]
		in := &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(w.cfg.QueueURL)}
		for j, c := range chunk {
			in.Entries = append(in.Entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(j)), ReceiptHandle: aws.String(c.receipt), VisibilityTimeout: c.secs,
			})
		}
		out, err := w.cfg.Queue.ChangeMessageVisibilityBatch(ctx, in)
		if err != nil {
			for _, c := range chunk {
				failed[c.m] = err
			}
			continue
		}
		for _, f := range out.Failed {
			j, _ := strconv.Atoi(aws.ToString(f.Id))
			if j >= 0 && j < len(chunk) {
				failed[chunk[j].m] = batchEntryError(f)
			}
		}
	}
	return failed
}

// giveBack hands messages back to SQS with visibility d (0: at once), in
// the order given. They leave the pool before the call, so a receive that
// gets one of them again right after files it as new.
func (w *Worker) giveBack(msgs []*message, d time.Duration) {
	if len(msgs) == 0 {
		return
	}
	secs := visibilitySeconds(d)
	var changes []visChange
	w.pool.mu.Lock()
	for _, m := range msgs {
		if receipt := m.receipt; w.pool.doneLocked(m) {
			changes = append(changes, visChange{m: m, receipt: receipt, secs: secs})
		}
	}
	w.pool.mu.Unlock()
	if len(changes) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sqsCallTimeout)
	defer cancel()
	for m, err := range w.changeVisibility(ctx, changes) {
		w.log.Warn("give back failed; the message becomes visible when its visibility runs out", "message_id", m.id, "group", m.group, "err", err)
	}
}

// batchEntryError is a failed batch entry as an error.
type batchEntryError sqstypes.BatchResultErrorEntry

func (e batchEntryError) Error() string {
	return aws.ToString(e.Code) + ": " + aws.ToString(e.Message)
}
