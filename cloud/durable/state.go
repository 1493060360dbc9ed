package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// gwState is what the consumer knows about one gateway: per outbox id and
// thing the seqs seen in the stream. It is a cache of the gateway's state
// row, never the durability promise: whatever it forgets, the gateway
// resends (docs/telemetry-path.md).
type gwState struct {
	// mu guards everything below; held across the gateway's I/O.
	mu         sync.Mutex
	tenant, gw string
	// version is the row's version as last read or written; 0: no row.
	version  int64
	outboxes map[string]*outboxState
	// lastAck is the wall-clock time of the last published ack (the
	// row holds the one before: ack.go).
	lastAck time.Time
	// unstored: seqs were taken in since the last write; an ack must
	// not name them before a write (ack.go).
	unstored bool
	// pending are the messages of an ack made but not yet published,
	// per outbox id; nil when none is (ack.go).
	pending map[string][][]byte
	// dirty: something worth writing happened since the last write (an
	// ack, a hole opened or closed, a gap raised).
	dirty bool
}

// outboxState is one outbox instance of a gateway.
type outboxState struct {
	// seen is the latest gateway time of its records (clock.go).
	seen time.Time
	// clock is the time the gateway spent sending: it advances with
	// seen, by at most Config.GapStep a step (step). Holes age on it
	// (gaps.go).
	clock  time.Time
	things map[string]*thingState
	// fresh: seqs arrived since its last ack (memory only: after a cold
	// start the gateway's resend makes them fresh again).
	fresh bool
}

// thingState is one (outbox, thing).
type thingState struct {
	spans spanSet
	// noticed is when each hole was first noticed, on the gateway's clock,
	// by its first seq; opened likewise on its outbox's clock.
	noticed, opened map[uint64]time.Time
	// raised are the holes raised as bowl.data_gap, still open. They are
	// never merged into spans: a raised hole is not acknowledged.
	raised spanSet
	// forgot counts the seqs forgotten by bounding spans.
	forgot uint64
}

func newGWState(tenant, gw string) *gwState {
	return &gwState{tenant: tenant, gw: gw, outboxes: map[string]*outboxState{}}
}

func (s *gwState) outbox(id string) *outboxState {
	o := s.outboxes[id]
	if o == nil {
		o = &outboxState{things: map[string]*thingState{}}
		s.outboxes[id] = o
	}
	return o
}

func (o *outboxState) thing(name string) *thingState {
	t := o.things[name]
	if t == nil {
		t = &thingState{noticed: map[uint64]time.Time{}, opened: map[uint64]time.Time{}}
		o.things[name] = t
	}
	return t
}

// step moves o's gateway time to now when it is later, and its clock by
// as much, up to most: a gateway that sent nothing for longer than a
// few batch intervals was offline (or had nothing to send), and
// offline it could not resend a hole either. Records taken in again,
// or out of order, move nothing.
func (o *outboxState) step(now time.Time, most time.Duration) {
	switch {
	case o.seen.IsZero():
		o.seen, o.clock = now, now
	case now.After(o.seen):
		o.clock = o.clock.Add(min(now.Sub(o.seen), most))
		o.seen = now
	}
}

// notice notes the holes of t not noticed before: now on the gateway's
// clock, at on its outbox's.
func (t *thingState) notice(now, at time.Time) {
	for _, h := range t.spans.holes() {
		if _, ok := t.noticed[h.From]; !ok {
			t.noticed[h.From], t.opened[h.From] = now, at
		}
	}
}

// tidy forgets what closed: notes and raised marks of holes that no longer
// exist. It reports whether the set of holes differs from before.
func (t *thingState) tidy(before []span) bool {
	holes := t.spans.holes()
	for from := range t.noticed {
		if !slices.ContainsFunc(holes, func(h span) bool { return h.From == from }) {
			delete(t.noticed, from)
			delete(t.opened, from)
		}
	}
	// A raised mark stays while some hole lies within it (a resend that
	// fills the middle of a raised hole leaves two parts, both raised).
	t.raised = slices.DeleteFunc(t.raised, func(r span) bool {
		return !slices.ContainsFunc(holes, func(h span) bool { return r.From <= h.From && h.To <= r.To })
	})
	return !slices.Equal(before, holes)
}

// bound keeps s within the Config's limits: spans per thing (the oldest
// go), things per outbox (by name; the registry already bounds a
// gateway's bowls), outboxes per gateway (the most recently seen stay).
func (s *gwState) bound(cfg *Config) {
	if len(s.outboxes) > cfg.MaxOutboxes {
		ids := make([]string, 0, len(s.outboxes))
		for id := range s.outboxes {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return s.outboxes[ids[i]].seen.After(s.outboxes[ids[j]].seen) })
		for _, id := range ids[cfg.MaxOutboxes:] {
			delete(s.outboxes, id)
		}
	}
	for _, o := range s.outboxes {
		if len(o.things) > cfg.MaxThings {
			names := make([]string, 0, len(o.things))
			for n := range o.things {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names[cfg.MaxThings:] {
				delete(o.things, n)
			}
		}
		for _, t := range o.things {
			before := t.spans.holes()
			var forgot uint64
			if t.spans, forgot = t.spans.bound(cfg.MaxSpans); forgot > 0 {
				t.forgot += forgot
				t.tidy(before)
			}
		}
	}
}

// merge folds o, another process's state of the same gateway, into s.
// Both hold only seqs seen in the stream, so the union does too.
func (s *gwState) merge(o *gwState) {
	if o.lastAck.After(s.lastAck) {
		s.lastAck = o.lastAck
	}
	for id, ob := range o.outboxes {
		mine := s.outbox(id)
		if ob.seen.After(mine.seen) {
			mine.seen = ob.seen
		}
		// The earlier clock and each hole's later opening: the two
		// processes' clocks may have skipped different outages, and
		// erring late delays a gap, never raises a false one.
		if mine.clock.IsZero() || (!ob.clock.IsZero() && ob.clock.Before(mine.clock)) {
			mine.clock = ob.clock
		}
		for name, th := range ob.things {
			t := mine.thing(name)
			before := t.spans.holes()
			t.spans = t.spans.union(th.spans)
			for from, at := range th.noticed {
				if cur, ok := t.noticed[from]; !ok || at.Before(cur) {
					t.noticed[from] = at
				}
			}
			for from, at := range th.opened {
				if cur, ok := t.opened[from]; !ok || at.After(cur) {
					t.opened[from] = at
				}
			}
			t.raised = t.raised.union(th.raised)
			t.forgot = max(t.forgot, th.forgot)
			t.tidy(before)
		}
	}
}

// storedState is the JSON of a state row's state attribute.
type storedState struct {
	LastAck  time.Time               `json:"last_ack,omitzero"`
	Outboxes map[string]storedOutbox `json:"outboxes"`
}

type storedOutbox struct {
	Seen time.Time `json:"seen,omitzero"`
	// Clock is absent from rows written before 2026-12-05: it starts at
	// Seen, and Opened at Noticed.
	Clock  time.Time              `json:"clock,omitzero"`
	Things map[string]storedThing `json:"things"`
}

type storedThing struct {
	Spans   [][2]uint64          `json:"spans"`
	Noticed map[string]time.Time `json:"noticed,omitempty"`
	Opened  map[string]time.Time `json:"opened,omitempty"`
	Raised  [][2]uint64          `json:"raised,omitempty"`
	Forgot  uint64               `json:"forgot,omitempty"`
}

func toPairs(s spanSet) [][2]uint64 {
	p := make([][2]uint64, len(s))
	for i, sp := range s {
		p[i] = [2]uint64{sp.From, sp.To}
	}
	return p
}

func fromPairs(p [][2]uint64) spanSet {
	var s spanSet
	for _, x := range p {
		if x[0] <= x[1] {
			s = s.add(x[0], x[1])
		}
	}
	return s
}

func (s *gwState) encode() ([]byte, error) {
	st := storedState{LastAck: s.lastAck, Outboxes: map[string]storedOutbox{}}
	for id, o := range s.outboxes {
		so := storedOutbox{Seen: o.seen, Clock: o.clock, Things: map[string]storedThing{}}
		for name, t := range o.things {
			th := storedThing{Spans: toPairs(t.spans), Raised: toPairs(t.raised), Forgot: t.forgot}
			if len(t.noticed) > 0 {
				th.Noticed = map[string]time.Time{}
				th.Opened = map[string]time.Time{}
				for from, at := range t.noticed {
					th.Noticed[u64(from)] = at.UTC()
					th.Opened[u64(from)] = t.opened[from].UTC()
				}
			}
			so.Things[name] = th
		}
		st.Outboxes[id] = so
	}
	return json.Marshal(st)
}

func decodeState(tenant, gw string, b []byte) (*gwState, error) {
	var st storedState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	s := newGWState(tenant, gw)
	s.lastAck = st.LastAck
	for id, so := range st.Outboxes {
		o := s.outbox(id)
		o.seen, o.clock = so.Seen, so.Clock
		if o.clock.IsZero() {
			o.clock = o.seen
		}
		for name, th := range so.Things {
			t := o.thing(name)
			t.spans, t.raised, t.forgot = fromPairs(th.Spans), fromPairs(th.Raised), th.Forgot
			for from, at := range th.Noticed {
				if f, err := strconv.ParseUint(from, 10, 64); err == nil {
					t.noticed[f], t.opened[f] = at, th.Opened[from]
					if t.opened[f].IsZero() { // a row from before the clock
						t.opened[f] = at
					}
				}
			}
			t.tidy(nil)
		}
	}
	return s, nil
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

// maxStateBytes keeps a state row well under DynamoDB's 400 KB item limit.
const maxStateBytes = 300 << 10

// loadState reads gw's state row; a missing row is an empty state.
func (c *Consumer) loadState(ctx context.Context, tenant, gw string) (*gwState, error) {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	out, err := c.cfg.DB.GetItem(cctx, &dynamodb.GetItemInput{TableName: aws.String(c.cfg.Table), Key: stateKey(tenant, gw), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("load state of gateway %s/%s: %w", tenant, gw, err)
	}
	s := newGWState(tenant, gw)
	if out.Item == nil {
		return s, nil
	}
	if v, ok := out.Item["state"].(*types.AttributeValueMemberS); ok {
		if s, err = decodeState(tenant, gw, []byte(v.Value)); err != nil {
			// A row this version cannot read is forgotten, not fatal: the
			// consumer then acknowledges less and the gateway resends.
			c.log.Error("gateway state unreadable: starting afresh", "tenant", tenant, "gateway", gw, "err", err)
			s = newGWState(tenant, gw)
		}
	}
	if v, ok := out.Item["version"].(*types.AttributeValueMemberN); ok {
		s.version, _ = strconv.ParseInt(v.Value, 10, 64)
	}
	return s, nil
}

// saveState writes s with optimistic locking; when another process wrote
// the row since, it reads it, merges and tries again.
func (c *Consumer) saveState(ctx context.Context, s *gwState) error {
	for attempt := 0; ; attempt++ {
		err := c.putState(ctx, s)
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) && attempt < 5 {
			c.obs.StateWrite("conflict")
			other, lerr := c.loadState(ctx, s.tenant, s.gw)
			if lerr != nil {
				return lerr
			}
			s.merge(other)
			s.version = other.version
			s.bound(&c.cfg)
			continue
		}
		if err != nil {
			c.obs.StateWrite("error")
			return err
		}
		c.obs.StateWrite("ok")
		s.dirty, s.unstored = false, false
		return nil
	}
}

func (c *Consumer) putState(ctx context.Context, s *gwState) error {
	body, err := s.encode()
	// Far past any real gateway (MaxThings x MaxSpans): halve the spans
	// kept until the row fits.
	lim := c.cfg
	for err == nil && len(body) > maxStateBytes && lim.MaxSpans > 1 {
		lim.MaxSpans = max(1, lim.MaxSpans/2)
		s.bound(&lim)
		body, err = s.encode()
	}
	if err != nil {
		return fmt.Errorf("encode state of gateway %s/%s: %w", s.tenant, s.gw, err)
	}
	item := stateKey(s.tenant, s.gw)
	item["entity"] = &types.AttributeValueMemberS{Value: StateEntity}
	item["tenant"] = &types.AttributeValueMemberS{Value: s.tenant}
	item["gateway"] = &types.AttributeValueMemberS{Value: s.gw}
	item["state"] = &types.AttributeValueMemberS{Value: string(body)}
	item["version"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(s.version+1, 10)}
	now := c.cfg.Now()
	item["updated_at"] = &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339Nano)}
	item["ttl"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(StateTTL).Unix(), 10)}
	in := &dynamodb.PutItemInput{TableName: aws.String(c.cfg.Table), Item: item}
	if s.version == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		in.ConditionExpression = aws.String("version = :v")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(s.version, 10)}}
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	if _, err := c.cfg.DB.PutItem(cctx, in); err != nil {
		return fmt.Errorf("store state of gateway %s/%s: %w", s.tenant, s.gw, err)
	}
	s.version++
	return nil
}
