package relay

import (
	"context"
	"time"
)

// readAhead bounds the messages a shard reader holds read and unsent. A
// batch takes one message per group, so a shard that holds one tenant's
// burst sends it one message per call; reading ahead of the burst puts
// the other tenants' messages behind it into those same calls rather than
// after the whole burst (docs/relay.md, "One tenant's burst").
const readAhead = 10_000

// checkpointEvery is how often, at most, a shard reader that keeps
// sending saves its checkpoint; an idle one saves as soon as everything
// read is sent.
const checkpointEvery = time.Second

// backlog is one shard's records read and not yet below its checkpoint,
// in stream order, and the messages among them still to send.
type backlog struct {
	recs    []backlogRec
	pending []*outgoing // in stream order
	attempt int         // batches in a row with an entry to resend
}

// backlogRec is one record read: o is nil when there is nothing to send
// (filtered, not convertible, dead-lettered).
type backlogRec struct {
	seq string
	o   *outgoing
}

// admit appends msgs, which are in stream order, to the backlog: a record
// too old, or a body that can never be sent, becomes a dead letter at once.
func (r *Relay) admit(ctx context.Context, b *backlog, msgs []Message) error {
	for _, m := range msgs {
		if !m.Created.IsZero() && time.Since(m.Created) > Failure.MaxRecordAge {
			if err := r.deadLetter(ctx, m, ConditionRecordAgeExceeded, "record is older than "+Failure.MaxRecordAge.String(), 0); err != nil {
				return err
			}
			b.recs = append(b.recs, backlogRec{seq: m.Sequence})
			continue
		}
		if p := bodyProblem(m.Body, MaxMessageBytes); p != "" {
			if err := r.deadLetter(ctx, m, ConditionUnsendable, p, 0); err != nil {
				return err
			}
			b.recs = append(b.recs, backlogRec{seq: m.Sequence})
			continue
		}
		o := &outgoing{Message: m}
		b.recs = append(b.recs, backlogRec{seq: m.Sequence, o: o})
		b.pending = append(b.pending, o)
	}
	return nil
}

// skip notes a record read that sends nothing.
func (b *backlog) skip(seq string) { b.recs = append(b.recs, backlogRec{seq: seq}) }

// sendNext sends the next batch of the backlog (after the backoff when
// the previous batch left an entry to resend).
func (r *Relay) sendNext(ctx context.Context, b *backlog) error {
	if len(b.pending) == 0 {
		return nil
	}
	if b.attempt > 0 {
		if err := r.backoff.Wait(ctx, b.attempt); err != nil {
			return err
		}
	}
	batch := nextBatch(b.pending)
	done, failed, err := r.sendBatch(ctx, batch)
	if err != nil {
		return err
	}
	if failed {
		b.attempt++
	} else {
		b.attempt = 0
	}
	var newest time.Time
	for o := range done {
		o.done = true
		if o.Created.After(newest) {
			newest = o.Created
		}
	}
	b.pending = remove(b.pending, done)
	if !newest.IsZero() {
		r.obs.Lag(time.Since(newest))
	}
	return nil
}

// advance drops the records at the front of the backlog that are sent
// (or had nothing to send) and returns the sequence number of the last
// one dropped: where the checkpoint may move, "" when it may not.
func (b *backlog) advance() string {
	seq, n := "", 0
	for n < len(b.recs) && (b.recs[n].o == nil || b.recs[n].o.done) {
		seq = b.recs[n].seq
		n++
	}
	b.recs = b.recs[n:]
	return seq
}
