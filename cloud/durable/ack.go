package durable

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// maxAckBytes bounds one acknowledgement message: AWS IoT's 128 KB.
const maxAckBytes = wire.MaxPayload

// ackIfDue publishes s's acknowledgements when one is due: some outbox
// has seqs not yet acknowledged and the last ack is AckEvery old. An ack
// repeats every range of the outbox seen in the stream, so a lost one is
// made good by the next. v1 seqs are never acknowledged: a v1 gateway
// forgets on PUBACK.
//
// An ack names only what the state row holds: the row is written first
// (when it lacks something), the messages are made from it, and while
// the row cannot be written no ack goes out. The gateway deletes what an
// ack names, so a row that lacked it (the process died between the ack
// and the row) would leave a hole no resend fills, a false
// bowl.data_gap. A publish that fails is tried again at the next call
// with the same messages, without writing the row again. Only when every
// message is published is the ack time recorded, in memory: the row's is
// the ack before, so after a restart an ack may come early, never late.
func (c *Consumer) ackIfDue(ctx context.Context, s *gwState, now time.Time) {
	if s.pending == nil && !c.makeAck(ctx, s, now) {
		return
	}
	ids := make([]string, 0, len(s.pending))
	for id := range s.pending {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	topic := wire.AckTopic(s.tenant, s.gw)
	for _, id := range ids {
		if err := c.publish(ctx, topic, s.pending[id]); err != nil {
			c.obs.Ack("error")
			c.warnUnlessStopping(ctx, "ack not published; tried again at the next call", "tenant", s.tenant, "gateway", s.gw, "outbox", id, "err", err)
			return
		}
		delete(s.pending, id)
	}
	s.pending = nil
	s.lastAck = now
}

// makeAck sets s.pending to the ack messages due, made from what the
// state row holds (written first when it lacks something); false when
// none is due or the row could not be written.
func (c *Consumer) makeAck(ctx context.Context, s *gwState, now time.Time) bool {
	var ids []string
	for id, o := range s.outboxes {
		if o.fresh && id != V1Outbox {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || (!s.lastAck.IsZero() && now.Sub(s.lastAck) < c.cfg.AckEvery) {
		return false
	}
	if s.dirty || s.unstored {
		if err := c.saveState(ctx, s); err != nil {
			c.obs.Ack("error")
			c.warnUnlessStopping(ctx, "ack not published: the gateway state it names was not written; tried again at the next call", "tenant", s.tenant, "gateway", s.gw, "err", err)
			return false
		}
	}
	// A write that lost a race merged the other process's row and bounded
	// the result (MaxOutboxes), which may have dropped an outbox: the row
	// no longer holds it, so the ack does not name it.
	ids = slices.DeleteFunc(ids, func(id string) bool { return s.outboxes[id] == nil })
	if len(ids) == 0 {
		return false
	}
	pending := map[string][][]byte{}
	for _, id := range ids {
		msgs, err := ackMessages(id, s.outboxes[id], now, maxAckBytes)
		if err != nil {
			c.obs.Ack("error")
			c.warnUnlessStopping(ctx, "ack not made; tried again at the next call", "tenant", s.tenant, "gateway", s.gw, "outbox", id, "err", err)
			return false
		}
		pending[id] = msgs
	}
	for _, id := range ids {
		s.outboxes[id].fresh = false // seqs taken in from now on make it fresh again
	}
	s.pending = pending
	return true
}

func (c *Consumer) publish(ctx context.Context, topic string, msgs [][]byte) error {
	for _, m := range msgs {
		cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
		err := c.cfg.Publisher.Publish(cctx, topic, m, 0)
		cancel()
		if err != nil {
			return fmt.Errorf("publish ack on %s: %w", topic, err)
		}
		c.obs.Ack("ok")
	}
	return nil
}

// ackMessages encodes the acknowledgement of outbox id: every thing's
// ranges, split into as many messages as it takes to keep each within
// limit bytes. A thing whose ranges alone pass the limit is split across
// messages too; each message is a valid ack on its own.
func ackMessages(id string, o *outboxState, at time.Time, limit int) ([][]byte, error) {
	things := make([]string, 0, len(o.things))
	for name, t := range o.things {
		if len(t.spans.ranges()) > 0 {
			things = append(things, name)
		}
	}
	sort.Strings(things)
	var (
		out [][]byte
		cur = wire.AckMessage{Outbox: id, Things: map[string][]wire.Range{}, At: at.UTC()}
	)
	flush := func() error {
		if len(cur.Things) == 0 {
			return nil
		}
		b, err := wire.EncodeAck(cur)
		if err != nil {
			return err
		}
		out = append(out, b)
		cur.Things = map[string][]wire.Range{}
		return nil
	}
	size := func() (int, error) {
		b, err := wire.EncodeAck(cur)
		return len(b), err
	}
	for _, name := range things {
		rs := o.things[name].spans.ranges()
		for len(rs) > 0 {
			// Take as many of the thing's ranges as fit, halving on
			// overflow; an empty message that cannot hold even one range
			// is a limit too small for any ack.
			n := len(rs)
			for {
				cur.Things[name] = append(cur.Things[name][:0:0], rs[:n]...)
				sz, err := size()
				if err != nil {
					return nil, err
				}
				if sz <= limit {
					break
				}
				delete(cur.Things, name)
				if n > 1 {
					n /= 2
					continue
				}
				if len(cur.Things) == 0 {
					return nil, fmt.Errorf("ack of outbox %s: one range of %s does not fit in %d bytes", id, name, limit)
				}
				if err := flush(); err != nil {
					return nil, err
				}
				n = len(rs)
			}
			rs = rs[n:]
			if len(rs) > 0 {
				if err := flush(); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}
