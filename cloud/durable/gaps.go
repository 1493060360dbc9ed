package durable

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
)

// raiseGaps raises bowl.data_gap for each hole of s open longer than
// GapGrace on its outbox's clock (the time the gateway spent sending:
// state.go, step), once: the hole is marked raised in the state (and
// stays a hole: it is never acknowledged), and the idempotency key makes
// a retry after a lost state emit nothing new. The first failure stops;
// the rest wait for the next call.
func (c *Consumer) raiseGaps(ctx context.Context, s *gwState) {
	ids := make([]string, 0, len(s.outboxes))
	for id := range s.outboxes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		o := s.outboxes[id]
		names := make([]string, 0, len(o.things))
		for n := range o.things {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			t := o.things[name]
			for _, h := range t.spans.holes() {
				since, ok := t.noticed[h.From]
				if !ok || o.clock.Sub(t.opened[h.From]) < c.cfg.GapGrace || t.isRaised(h) {
					continue
				}
				g := catalog.DataGap{Thing: name, Lane: wire.KindTelemetry, Outbox: id, FromSeq: h.From, ToSeq: h.To, MissingSince: since.UTC()}
				if err := c.emitGap(ctx, s.tenant, g); err != nil {
					c.warnUnlessStopping(ctx, "data gap not raised; tried again at the next call", "tenant", s.tenant, "thing", name, "outbox", id, "from_seq", h.From, "to_seq", h.To, "err", err)
					return
				}
				t.raised = t.raised.add(h.From, h.To)
				s.dirty = true
			}
		}
	}
}

func (c *Consumer) emitGap(ctx context.Context, tenant string, g catalog.DataGap) error {
	cctx, cancel := context.WithTimeout(engine.WithActor(engine.WithTenant(ctx, tenant), "consumer"), c.cfg.CallTimeout)
	defer cancel()
	_, err := c.cfg.Emitter.EmitEvent(cctx, engine.Event{Type: catalog.TypeDataGap, Payload: g, IdempotencyKey: gapIdempotencyKey(g)})
	switch {
	case errors.Is(err, engine.ErrDuplicate):
		return nil
	case err != nil:
		return fmt.Errorf("emit %s for tenant %q: %w", catalog.TypeDataGap, tenant, err)
	}
	c.obs.GapRaised()
	c.log.Warn("data gap", "tenant", tenant, "thing", g.Thing, "outbox", g.Outbox, "from_seq", g.FromSeq, "to_seq", g.ToSeq, "missing_since", g.MissingSince)
	return nil
}

// isRaised reports whether hole h was raised already (it lies within a
// raised hole).
func (t *thingState) isRaised(h span) bool {
	for _, r := range t.raised {
		if r.From <= h.From && h.To <= r.To {
			return true
		}
	}
	return false
}
