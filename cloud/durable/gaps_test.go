package durable

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// gatewayFeed sends one gateway's batches of thing "gw-1:a" on outbox
// ob1, a batch a minute on the gateway's clock.
type gatewayFeed struct {
	r   *rig
	gw  time.Time // the gateway's clock
	seq uint64    // the next new seq
}

// batch sends seqs from..to stamped with the feed's clock, received at
// once (a clock in step with the wall clock).
func (f *gatewayFeed) batch(t *testing.T, from, to uint64) {
	t.Helper()
	f.r.clock.Set(f.gw)
	f.r.handle(t, f.r.c, f.r.record(t, tenant, "gw-1", f.r.clock.Now(), encode(t, "ob1", f.gw, weights("gw-1:a", from, to, f.gw))))
}

// minutes sends n batches of ten new seqs, one a minute.
func (f *gatewayFeed) minutes(t *testing.T, n int) {
	t.Helper()
	for range n {
		f.gw = f.gw.Add(time.Minute)
		f.batch(t, f.seq, f.seq+9)
		f.seq += 10
	}
}

// A gateway that cannot resend (offline, its broker down) sends no
// batch, but its clock goes on: the first batch after an outage longer
// than GapGrace must not make a hole noticed before it look overdue, as
// the gateway's resend of it is still on its way (AWS IoT keeps no
// order). Only time the gateway spent sending counts, each step between
// two batches up to GapStep.
func TestGapNotRaisedByOutage(t *testing.T) {
	r := newRig(t, nil)
	f := &gatewayFeed{r: r, gw: t0, seq: 20}
	f.batch(t, 1, 10)
	f.minutes(t, 30) // hole 11..19 noticed at t0+1m, open 30 min
	f.gw = f.gw.Add(8 * time.Hour)
	f.batch(t, f.seq, f.seq+9) // the first batch after a night offline
	f.seq += 10
	if gaps := r.emit.gaps(); len(gaps) != 0 {
		t.Fatalf("gaps after an 8 h outage = %+v; want none (the hole had 30 min of the gateway's time to be resent, not %v)", gaps, DefaultGapGrace)
	}
	f.minutes(t, 5)
	f.gw = f.gw.Add(time.Minute)
	f.batch(t, 11, 19) // the resend
	if gaps := r.emit.gaps(); len(gaps) != 0 {
		t.Fatalf("gaps = %+v; want none: the hole closed", gaps)
	}
	f.minutes(t, 60)
	if gaps := r.emit.gaps(); len(gaps) != 0 {
		t.Fatalf("gaps = %+v; want none: the hole closed", gaps)
	}
}

// Outages count at most GapStep each, but a hole that stays open over
// GapGrace of the gateway sending still raises bowl.data_gap, stamped
// with the gateway's clock when it was first noticed.
func TestGapRaisedAfterOutageAndGrace(t *testing.T) {
	r := newRig(t, nil)
	step := DefaultConfig().GapStep
	f := &gatewayFeed{r: r, gw: t0, seq: 20}
	f.batch(t, 1, 10)
	f.minutes(t, 1) // hole 11..19 noticed at t0+1m
	for range 3 {
		f.gw = f.gw.Add(2 * time.Hour) // an outage: counts as one step
		f.minutes(t, 10)
	}
	credited := 3 * (step + 9*time.Minute)
	left := int((DefaultGapGrace - credited) / time.Minute)
	f.minutes(t, left-1)
	if gaps := r.emit.gaps(); len(gaps) != 0 {
		t.Fatalf("gaps after %v of the gateway's time = %+v; want none yet", credited+time.Duration(left-1)*time.Minute, gaps)
	}
	f.minutes(t, 1)
	want := catalog.DataGap{Thing: "gw-1:a", Lane: wire.KindTelemetry, Outbox: "ob1", FromSeq: 11, ToSeq: 19, MissingSince: t0.Add(time.Minute)}
	if gaps := r.emit.gaps(); len(gaps) != 1 || gaps[0] != want {
		t.Fatalf("gaps after %v of the gateway's time = %+v; want once %+v", DefaultGapGrace, gaps, want)
	}
}

// A consumer that died between publishing an ack and writing its state
// row would leave a row without seqs the gateway has since deleted: a
// hole no resend fills, raised as a false bowl.data_gap once its grace
// is over. So the row that holds what an ack names is written first, and
// while it cannot be written no ack goes out (the gateway resends).
func TestAckOnlyWhatTheRowHolds(t *testing.T) {
	edit := func(c *Config) { c.AckEvery = 2 * time.Minute }
	r := newRig(t, edit)
	f := &gatewayFeed{r: r, gw: t0, seq: 1}
	f.minutes(t, 2) // 1..10 acknowledged with the row written; 11..20 taken in
	r.db.mu.Lock()
	r.db.fail = errors.New("process killed")
	r.db.mu.Unlock()
	f.minutes(t, 1) // 21..30: an ack is due, the row cannot be written
	row := str(r.db.items[[2]string{StatePK(tenant, "gw-1"), StateSK}], "state")
	st, err := decodeState(tenant, "gw-1", []byte(row))
	if err != nil {
		t.Fatal(err)
	}
	stored := st.outboxes["ob1"].things["gw-1:a"].spans
	acked := ackedRanges(t, r.pub, "ob1")["gw-1:a"]
check:
	for _, a := range acked {
		for q := a.From; q <= a.To; q++ {
			if !stored.contains(q) {
				t.Errorf("acked %v, the row holds %v: seq %d acknowledged, not stored", acked, stored, q)
				break check
			}
		}
	}
	// A new process on the row; the gateway resends what it was not told
	// about once its ack timeout is over.
	r.db.mu.Lock()
	r.db.fail = nil
	r.db.mu.Unlock()
	r.c = r.consumer(t, r.db, edit)
	f.minutes(t, 45)
	for q := uint64(11); q <= 30; q++ {
		if !acked.contains(q) {
			f.batch(t, q, q)
		}
	}
	f.minutes(t, 60)
	if gaps := r.emit.gaps(); len(gaps) != 0 {
		t.Fatalf("gaps = %+v; want none (the stream holds every seq)", gaps)
	}
}

// The default grace covers a lost resend. A gateway sends what is not
// acknowledged wire.DefaultAckTimeout after it sent it in its next batch,
// at worst a batch interval later; when that resend is lost too, the next
// comes as long again, and only a batch lost three times is a hole the
// consumer may report. An outage just before the second resend delays
// it while counting at most GapStep. The batch that carries the resend
// arrives in two parts, its new seqs first (AWS IoT keeps no order
// between them), so the hole is judged before it closes. The gateways'
// defaults are the contract's (edge/wire): a longer DefaultAckTimeout
// without a longer DefaultGapGrace fails here.
func TestDefaultGapGraceCoversALostResend(t *testing.T) {
	interval := wire.DefaultBatchInterval
	resendAfter := int(wire.DefaultAckTimeout/interval) + 1 // batches from a send to its resend, at worst
	const lostAt = 1                                        // the batch whose seqs 11..20 are lost
	sentAt := t0.Add(lostAt * interval)
	for _, tc := range []struct {
		name    string
		sends   int  // times seqs 11..20 are sent and lost
		outage  bool // the gateway is offline for 8 h just before the send that arrives
		wantGap bool
	}{
		{"resend lost", 2, false, false},
		{"resend lost, outage before the next", 2, true, false},
		{"lost three times", 3, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			send := func(at time.Time, s batch.Series) {
				t.Helper()
				r.clock.Set(at)
				r.handle(t, r.c, r.record(t, tenant, "gw-1", at, encode(t, "ob1", at, s)))
				if gaps := r.emit.gaps(); !tc.wantGap && len(gaps) != 0 {
					t.Fatalf("at %v after the loss (grace %v, GapStep %v): gaps = %+v; want none", at.Sub(sentAt), DefaultGapGrace, DefaultConfig().GapStep, gaps)
				}
			}
			arrives := lostAt + tc.sends*resendAfter // the batch whose resend arrives
			gw, next := t0, uint64(1)
			for k := 0; k <= arrives+1; k++ {
				if k > 0 {
					gw = gw.Add(interval)
				}
				resend := k > lostAt && (k-lostAt)%resendAfter == 0
				switch {
				case k == lostAt:
					next += 10 // seqs 11..20, lost
					continue
				case resend && k < arrives:
					continue // lost again, with the batch that carried it
				case tc.outage && k == arrives:
					gw = gw.Add(8 * time.Hour)
				}
				send(gw, weights("gw-1:a", next, next+9, gw))
				next += 10
				if resend {
					send(gw, weights("gw-1:a", 11, 20, sentAt))
				}
			}
			want := catalog.DataGap{Thing: "gw-1:a", Lane: wire.KindTelemetry, Outbox: "ob1", FromSeq: 11, ToSeq: 20, MissingSince: t0.Add((lostAt + 1) * interval)}
			if gaps := r.emit.gaps(); tc.wantGap && (len(gaps) != 1 || gaps[0] != want) {
				t.Fatalf("gaps = %+v; want once %+v", gaps, want)
			}
		})
	}
}

// The row written before an ack can lose a race: the process reads the
// row another process wrote, merges it and bounds the result, which may
// drop an outbox the ack was about to name (MaxOutboxes keeps the most
// recently seen). The ack then names only what the row holds: not the
// dropped outbox, and the process goes on (it once made that ack from a
// nil outbox and panicked).
func TestAckAfterMergeDroppedItsOutbox(t *testing.T) {
	edit := func(c *Config) { c.AckEvery, c.MaxOutboxes = 10*time.Minute, 1 }
	r := newRig(t, edit)
	// Process A acknowledges outbox ob1 (row version 1).
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0, encode(t, "ob1", t0, weights("gw-1:a", 1, 10, t0))))
	// The gateway's outbox was replaced: process B reads the row, sees
	// ob2 only later on the gateway's clock, drops ob1 and writes.
	r.clock.Set(t0.Add(time.Minute))
	b := r.consumer(t, r.db, edit)
	r.handle(t, b, r.record(t, tenant, "gw-1", t0.Add(time.Minute), encode(t, "ob2", t0.Add(time.Minute), weights("gw-1:a", 1, 10, t0))))
	// A late ob1 batch reaches A once an ack is due: A's row write
	// conflicts, and the merge keeps ob2, the later outbox.
	r.clock.Set(t0.Add(11 * time.Minute))
	r.pub.msgs = nil
	r.handle(t, r.c, r.record(t, tenant, "gw-1", t0.Add(11*time.Minute), encode(t, "ob1", t0.Add(30*time.Second), weights("gw-1:a", 11, 20, t0))))
	st, err := decodeState(tenant, "gw-1", []byte(str(r.db.items[[2]string{StatePK(tenant, "gw-1"), StateSK}], "state")))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.outboxes["ob1"]; ok {
		t.Fatalf("row outboxes = %v; want ob2 only (MaxOutboxes 1)", slices.Collect(maps.Keys(st.outboxes)))
	}
	if acked := ackedRanges(t, r.pub, "ob1"); len(acked) != 0 {
		t.Errorf("acked ob1 %v after the row dropped it; want no ack of ob1", acked)
	}
}
