package durable

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// maxAckBytes bounds one acknowledgement message: AWS IoT's 128 KB.
const maxAckBytes = wire.MaxPayload

// ackIfDue publishes s's acknowledgements when one is due: some outbox
// has seqs not yet acknowledged and the last ack is AckEvery old. An ack
// repeats every range of the outbox seen in the stream, so a lost one is
// made good by the next. Only when every message of it is published is
// the ack time recorded (and the state row written, finish). v1 seqs are
// never acknowledged: a v1 gateway forgets on PUBACK.
func (c *Consumer) ackIfDue(ctx context.Context, s *gwState, now time.Time) {
	var ids []string
	for id, o := range s.outboxes {
		if o.fresh && id != V1Outbox {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || (!s.lastAck.IsZero() && now.Sub(s.lastAck) < c.cfg.AckEvery) {
		return
	}
	sort.Strings(ids)
	topic := wire.AckTopic(s.tenant, s.gw)
	for _, id := range ids {
		msgs, err := ackMessages(id, s.outboxes[id], now, maxAckBytes)
		if err == nil {
			err = c.publish(ctx, topic, msgs)
		}
		if err != nil {
			c.obs.Ack("error")
			c.warnUnlessStopping(ctx, "ack not published; tried again at the next call", "tenant", s.tenant, "gateway", s.gw, "outbox", id, "err", err)
			return
		}
		s.outboxes[id].fresh = false
	}
	s.lastAck = now
	s.dirty = true
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
