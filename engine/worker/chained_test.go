package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/ddbjson"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// TestOnlyChainedEventRowsRun: a body that decodes to an envelope but is
// not a chained event row (its key is not EventPK of its tenant and SeqSK
// of its seq, or its hash is not its chain hash) never reaches a handler:
// it is recorded as a poison pill naming why, counted, and deleted, and
// the event behind it in its group runs (issue 22: such a row could be
// written outside every chain and shipped an order).
func TestOnlyChainedEventRowsRun(t *testing.T) {
	h := newHarness(t, 3*time.Second, 5)
	var c calls
	h.start([]engine.Subscription{durable("ship_order", "com.*", func(_ context.Context, env engine.Envelope) error {
		c.inc(env.ID)
		return nil
	})}, nil)
	forged := func(mutate func(map[string]types.AttributeValue)) string {
		env := enginetest.Envelope(t, h.tenant, "com.payment_completed", 1, map[string]any{"order_id": "o-1"})
		item, err := engine.EventItem(env)
		if err != nil {
			t.Fatal(err)
		}
		mutate(item)
		b, err := ddbjson.MarshalMap(item)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	pk := func(v string) func(map[string]types.AttributeValue) {
		return func(it map[string]types.AttributeValue) { it[engine.AttrPK] = attr.S(v) }
	}
	bodies := map[string]string{
		"pk X#EVENT":              forged(pk("X#EVENT")),
		"pk TENANT#EVENT":         forged(pk("TENANT#EVENT")),
		"pk in lower case":        forged(pk("tenant#" + h.tenant + "#EVENT")),
		"pk of another tenant":    forged(pk(engine.EventPK("other"))),
		"tenant with a separator": forged(pk("TENANT#" + h.tenant + "#x#EVENT")),
		"sk of another seq":       forged(func(it map[string]types.AttributeValue) { it[engine.AttrSK] = attr.S(engine.SeqSK(2)) }),
		"no sk":                   forged(func(it map[string]types.AttributeValue) { delete(it, engine.AttrSK) }),
		"hash not the chain hash": forged(func(it map[string]types.AttributeValue) { it[engine.AttrHash] = attr.S(strings.Repeat("0", 64)) }),
		"empty hash":              forged(func(it map[string]types.AttributeValue) { it[engine.AttrHash] = attr.S("") }),
	}
	for _, body := range bodies {
		h.sendRaw(body, h.tenant, ulid.Make().String())
	}
	real := enginetest.Envelope(t, h.tenant, "com.payment_completed", 1, map[string]any{"order_id": "o-2"})
	h.send(real)
	h.waitFor("the chained event after the forged ones", func() bool { return h.row(real.ID, "ship_order").Status == inbox.Completed })
	h.waitFor("queue drained", func() bool { return h.depth(h.q.URL) == 0 })
	if n := c.get(real.ID); n != 1 {
		t.Errorf("handler ran %d times for the chained event; want 1", n)
	}
	if n := c.total(); n != 1 {
		t.Errorf("handler ran %d times in all; want 1 (only the chained event)", n)
	}
	if n := h.obs.get("poison"); n != len(bodies) {
		t.Errorf("poison pills counted = %d; want %d", n, len(bodies))
	}
	if n := h.obs.get("not_chained"); n != len(bodies) {
		t.Errorf("refusals counted = %d; want %d", n, len(bodies))
	}
	pills, err := h.dl.Poison(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range bodies {
		found := false
		for _, p := range pills {
			if p.Body == body {
				found = true
				if !strings.Contains(p.Error, "not a chained event row") {
					t.Errorf("%s: poison letter error %q; want it to say %q", name, p.Error, "not a chained event row")
				}
			}
		}
		if !found {
			t.Errorf("%s: no poison letter for the body", name)
		}
	}
}

func (c *calls) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

func (o *countingObserver) NotChained(string) { o.add("not_chained") }
