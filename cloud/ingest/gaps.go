package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/edge/wire"
)

// LaneEvents is the one lane whose seqs ingest tracks: the events topic's
// kind. It is the seq row's sort key and bowl.data_gap's "lane". Telemetry
// seqs are tracked by cloud/durable, from the stream (docs/telemetry-path.md).
const LaneEvents = wire.KindEvents

// span is an inclusive range of seqs.
type span struct{ From, To uint64 }

// seqState is what is known about one thing's lane: the seqs that arrived
// (or were accounted for: dropped at the edge, or reported as a gap) as
// sorted, disjoint, non-adjacent spans, and when each hole between them was
// first noticed, by the hole's first seq.
type seqState struct {
	Spans   []span
	Noticed map[uint64]time.Time
	// Seen is the latest gateway (bowl) time of the lane's events,
	// corrected as docs/clock.md says; zero until one carried a time.
	Seen time.Time
	// BowlNoticed is, per hole's first seq, the gateway time of the latest
	// event before the hole was noticed (Seen then): bowl.data_gap's
	// missing_since, so a gap is placed on the bowls' clock, never the
	// wall clock ingest runs on. Noticed stays on the wall clock: the
	// grace is measured there, since Check runs when no event comes.
	BowlNoticed map[uint64]time.Time
	// Forgot counts the holes (and their seqs) merged away by summarise.
	Forgot forgotten
}

// forgotten counts holes given up to keep a row bounded.
type forgotten struct {
	Holes int    `json:"holes"`
	Seqs  uint64 `json:"seqs"`
}

// add merges [from, to] into the spans.
func (s *seqState) add(from, to uint64) {
	s.Spans = append(s.Spans, span{from, to})
	sort.Slice(s.Spans, func(i, j int) bool { return s.Spans[i].From < s.Spans[j].From })
	out := s.Spans[:1]
	for _, sp := range s.Spans[1:] {
		last := &out[len(out)-1]
		if sp.From <= last.To+1 { // overlapping or adjacent
			last.To = max(last.To, sp.To)
			continue
		}
		out = append(out, sp)
	}
	s.Spans = out
}

// holes returns the missing ranges between the spans.
func (s *seqState) holes() []span {
	var h []span
	for i := 1; i < len(s.Spans); i++ {
		h = append(h, span{s.Spans[i-1].To + 1, s.Spans[i].From - 1})
	}
	return h
}

// due notes when each hole was first seen (now on the wall clock, and
// bowlAt on the gateway's, for new ones), forgets notes of holes that
// closed, and returns the holes missing for longer than grace (on the
// wall clock) with the gateway time they were first noticed at (the wall
// time when no event of the lane carried a gateway time).
func (s *seqState) due(now, bowlAt time.Time, grace time.Duration) (holes []span, since []time.Time) {
	notes := make(map[uint64]time.Time)
	bowl := make(map[uint64]time.Time)
	for _, h := range s.holes() {
		t, ok := s.Noticed[h.From]
		if !ok {
			t = now
		}
		notes[h.From] = t
		b, ok := s.BowlNoticed[h.From]
		if !ok {
			b = bowlAt
		}
		if !b.IsZero() {
			bowl[h.From] = b
		}
		if now.Sub(t) >= grace {
			at := b
			if at.IsZero() {
				at = t
			}
			holes, since = append(holes, h), append(since, at)
		}
	}
	s.Noticed, s.BowlNoticed = notes, bowl
	return holes, since
}

// summarise merges the oldest holes into the spans around them until at
// most maxSpans spans remain, and counts what it forgot in s.Forgot: a
// device that skips every other seq would otherwise grow its row past
// DynamoDB's 400 KB item limit (1000 spans and their notes are about 70 KB
// of JSON).
func (s *seqState) summarise(maxSpans int) (holes int) {
	for len(s.Spans) > maxSpans && len(s.Spans) > 1 {
		h := span{s.Spans[0].To + 1, s.Spans[1].From - 1}
		s.Forgot.Holes++
		s.Forgot.Seqs += h.To - h.From + 1
		delete(s.Noticed, h.From)
		delete(s.BowlNoticed, h.From)
		s.Spans[1].From = s.Spans[0].From
		s.Spans = s.Spans[1:]
		holes++
	}
	return holes
}

// clone returns a deep copy of s.
func (s seqState) clone() seqState {
	c := seqState{Spans: slices.Clone(s.Spans), Noticed: make(map[uint64]time.Time, len(s.Noticed)), Seen: s.Seen,
		BowlNoticed: make(map[uint64]time.Time, len(s.BowlNoticed)), Forgot: s.Forgot}
	for k, v := range s.Noticed {
		c.Noticed[k] = v
	}
	for k, v := range s.BowlNoticed {
		c.BowlNoticed[k] = v
	}
	return c
}

// GapDB is the part of DynamoDB the gap tracker uses; safe for concurrent use.
type GapDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

type laneKey struct{ tenant, thing, lane string }

// DataGap is one missing range of a thing's lane: bowl.data_gap's payload,
// without an outbox (ingest tracks the events lane per thing).
type DataGap = catalog.DataGap

// observation is a range of seqs of one thing's lane that is durable (or
// accounted for: dropped at the edge, or rejected), and the gateway (bowl)
// time of its event, corrected; zero when unknown (a rejected message).
type observation struct {
	key      laneKey
	from, to uint64
	at       time.Time
}

// ackGroup is an acknowledgement waiting for the rows of all its
// observations to be written.
type ackGroup struct {
	left atomic.Int32
	fn   func()
}

func (a *ackGroup) done() {
	if a.left.Add(-1) == 0 && a.fn != nil {
		a.fn()
	}
}

// pendingLane is what waits for one lane's row: merged spans and the
// acknowledgements they hold back.
type pendingLane struct {
	st   seqState
	seen time.Time // the latest gateway time of the observations
	acks []*ackGroup
}

// cachedLane is the last state this process wrote to a lane's row, so the
// next write needs no read unless another process wrote in between.
type cachedLane struct {
	st      seqState
	version int64
}

// maxCachedLanes bounds the write cache; past it the cache starts afresh.
const maxCachedLanes = 10000

// writeConcurrency is how many rows one write round puts at once.
const writeConcurrency = 16

// gapTracker makes observed seqs durable in the shared rows before their
// messages are acknowledged, and raises gaps.
type gapTracker struct {
	db       GapDB
	table    string
	grace    time.Duration
	maxSpans int
	now      func() time.Time
	raise    func(ctx context.Context, tenant string, g DataGap) error
	log      *slog.Logger

	kick chan struct{}

	mu      sync.Mutex
	pending map[laneKey]*pendingLane
	watch   map[laneKey]bool // keys that had holes at their last write
	cache   map[laneKey]cachedLane
}

func newGapTracker(db GapDB, table string, grace time.Duration, maxSpans int, now func() time.Time, log *slog.Logger, raise func(context.Context, string, DataGap) error) *gapTracker {
	return &gapTracker{db: db, table: table, grace: grace, maxSpans: maxSpans, now: now, raise: raise, log: log,
		kick: make(chan struct{}, 1), pending: make(map[laneKey]*pendingLane), watch: make(map[laneKey]bool), cache: make(map[laneKey]cachedLane)}
}

// Record queues obs for the next write round and calls ack (when not nil)
// once every row they touch is written: a record is done only after its
// seqs are durable, so a crash forgets nothing the event source will not
// hand over again. Rows are written in rounds, one put per lane per round, while
// the previous round is in progress.
func (g *gapTracker) Record(ack func(), obs ...observation) {
	if len(obs) == 0 {
		if ack != nil {
			ack()
		}
		return
	}
	a := &ackGroup{fn: ack}
	a.left.Store(int32(len(obs)))
	g.mu.Lock()
	for _, o := range obs {
		p := g.pending[o.key]
		if p == nil {
			p = &pendingLane{}
			g.pending[o.key] = p
		}
		p.st.add(o.from, o.to)
		if o.at.After(p.seen) {
			p.seen = o.at
		}
		p.acks = append(p.acks, a)
	}
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// writeLoop writes recorded seqs in rounds until ctx ends; a failed round
// keeps its work (and its messages unacknowledged) and is retried with
// backoff.
func (g *gapTracker) writeLoop(ctx context.Context) {
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.kick:
		}
		if err := g.writeRound(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			g.log.Warn("seq rows not written; their messages stay unacknowledged; retrying", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(time.Duration(failures)*100*time.Millisecond, 5*time.Second)):
			}
			select {
			case g.kick <- struct{}{}:
			default:
			}
			continue
		}
		failures = 0
	}
}

// drain writes rounds until nothing is pending or ctx ends.
func (g *gapTracker) drain(ctx context.Context) error {
	for {
		g.mu.Lock()
		n := len(g.pending)
		g.mu.Unlock()
		if n == 0 {
			return nil
		}
		if err := g.writeRound(ctx); err != nil {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// writeRound writes everything pending, one put per lane, and calls the
// acknowledgements of the rows written. Lanes that failed go back to
// pending; it returns their errors joined.
func (g *gapTracker) writeRound(ctx context.Context) error {
	g.mu.Lock()
	work := g.pending
	g.pending = make(map[laneKey]*pendingLane)
	g.mu.Unlock()
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, writeConcurrency)
		emu  sync.Mutex
		errs []error
	)
	for k, p := range work {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			open, err := g.sync(ctx, k, p.st.Spans, p.seen, false)
			if err != nil {
				g.mu.Lock()
				q := g.pending[k]
				if q == nil {
					q = &pendingLane{}
					g.pending[k] = q
				}
				for _, sp := range p.st.Spans {
					q.st.add(sp.From, sp.To)
				}
				if p.seen.After(q.seen) {
					q.seen = p.seen
				}
				q.acks = append(q.acks, p.acks...)
				g.mu.Unlock()
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
				return
			}
			g.setWatch(k, open)
			for _, a := range p.acks {
				a.done()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (g *gapTracker) setWatch(k laneKey, open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if open {
		g.watch[k] = true
	} else {
		delete(g.watch, k)
	}
}

// Check raises the gaps that are due on the lanes this process saw holes
// in. It returns the first error; those lanes are checked again next time.
func (g *gapTracker) Check(ctx context.Context) error {
	g.mu.Lock()
	keys := make([]laneKey, 0, len(g.watch))
	for k := range g.watch {
		keys = append(keys, k)
	}
	g.mu.Unlock()
	var errs []error
	for _, k := range keys {
		open, err := g.sync(ctx, k, nil, time.Time{}, true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		g.setWatch(k, open)
	}
	return errors.Join(errs...)
}

// sync merges spans, whose latest gateway time is seen, into k's row with
// optimistic locking; with raise it also raises the gaps that are due. It
// reports whether holes remain.
func (g *gapTracker) sync(ctx context.Context, k laneKey, spans []span, seen time.Time, raise bool) (bool, error) {
	for attempt := 0; ; attempt++ {
		g.mu.Lock()
		c, ok := g.cache[k]
		g.mu.Unlock()
		var (
			st      seqState
			version int64
		)
		// Raising reads the row afresh: another process may have filled
		// a hole since this one last wrote it.
		if ok && attempt == 0 && !raise {
			st, version = c.st.clone(), c.version
		} else {
			var err error
			if st, version, err = g.load(ctx, k); err != nil {
				return false, err
			}
		}
		if st.Noticed == nil {
			st.Noticed = make(map[uint64]time.Time)
		}
		before := st.clone()
		// A hole these spans open is stamped with the lane's gateway time
		// before them: that of the latest event below the hole when events
		// come in order (the first ones' own time on a new lane).
		bowlAt := st.Seen
		if bowlAt.IsZero() {
			bowlAt = seen
		}
		for _, sp := range spans {
			st.add(sp.From, sp.To)
		}
		if seen.After(st.Seen) {
			st.Seen = seen
		}
		if len(st.Spans) == 0 {
			return false, nil
		}
		if n := st.summarise(g.maxSpans); n > 0 {
			g.log.Warn("seq row at its span limit: oldest holes forgotten, not raised", "thing", k.thing, "lane", k.lane, "holes", n, "max_spans", g.maxSpans, "forgotten_total", st.Forgot.Holes)
		}
		holes, since := st.due(g.now(), bowlAt, g.grace)
		if raise {
			for i, h := range holes {
				gap := DataGap{Thing: k.thing, Lane: k.lane, FromSeq: h.From, ToSeq: h.To, MissingSince: since[i].UTC()}
				if err := g.raise(ctx, k.tenant, gap); err != nil {
					return true, fmt.Errorf("raise data gap %s %s %d..%d: %w", k.thing, k.lane, h.From, h.To, err)
				}
				st.add(h.From, h.To)
			}
			if len(holes) > 0 {
				st.due(g.now(), bowlAt, g.grace) // forget the notes of closed holes
			}
		}
		if version > 0 && sameState(before, st) {
			return len(st.Spans) > 1, nil // nothing new to write
		}
		err := g.store(ctx, k, st, version)
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) && attempt < 20 {
			continue // another ingest process wrote the row: merge again
		}
		if err != nil {
			g.mu.Lock()
			delete(g.cache, k)
			g.mu.Unlock()
			return false, err
		}
		g.mu.Lock()
		if len(g.cache) >= maxCachedLanes {
			g.cache = make(map[laneKey]cachedLane)
		}
		g.cache[k] = cachedLane{st: st.clone(), version: version + 1}
		g.mu.Unlock()
		return len(st.Spans) > 1, nil
	}
}

// sameState reports whether a and b would store the same row.
func sameState(a, b seqState) bool {
	if !slices.Equal(a.Spans, b.Spans) || a.Forgot != b.Forgot || !a.Seen.Equal(b.Seen) {
		return false
	}
	return sameTimes(a.Noticed, b.Noticed) && sameTimes(a.BowlNoticed, b.BowlNoticed)
}

func sameTimes(a, b map[uint64]time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !w.Equal(v) {
			return false
		}
	}
	return true
}

type storedState struct {
	Spans   [][2]uint64       `json:"spans"`
	Noticed map[string]string `json:"noticed,omitempty"`
	// Seen and BowlNoticed are on the gateway's clock (seqState).
	Seen        string            `json:"seen,omitempty"`
	BowlNoticed map[string]string `json:"bowl_noticed,omitempty"`
	Forgotten   *forgotten        `json:"forgotten,omitempty"`
}

func (g *gapTracker) load(ctx context.Context, k laneKey) (seqState, int64, error) {
	out, err := g.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(g.table), Key: gapKey(k.thing, k.lane), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return seqState{}, 0, fmt.Errorf("load seq state of %s %s: %w", k.thing, k.lane, err)
	}
	if out.Item == nil {
		return seqState{}, 0, nil
	}
	var version int64
	if v, ok := out.Item["version"].(*types.AttributeValueMemberN); ok {
		version, _ = strconv.ParseInt(v.Value, 10, 64)
	}
	var ss storedState
	if v, ok := out.Item["state"].(*types.AttributeValueMemberS); ok {
		if err := json.Unmarshal([]byte(v.Value), &ss); err != nil {
			return seqState{}, 0, fmt.Errorf("seq state of %s %s: %w", k.thing, k.lane, err)
		}
	}
	st := seqState{Noticed: parseTimes(ss.Noticed), BowlNoticed: parseTimes(ss.BowlNoticed)}
	if ss.Seen != "" {
		st.Seen, _ = time.Parse(time.RFC3339Nano, ss.Seen)
	}
	if ss.Forgotten != nil {
		st.Forgot = *ss.Forgotten
	}
	for _, sp := range ss.Spans {
		st.Spans = append(st.Spans, span{sp[0], sp[1]})
	}
	return st, version, nil
}

// parseTimes reads a stored map of seq to RFC 3339 time, skipping what
// does not parse.
func parseTimes(m map[string]string) map[uint64]time.Time {
	out := make(map[uint64]time.Time, len(m))
	for from, at := range m {
		f, err1 := strconv.ParseUint(from, 10, 64)
		t, err2 := time.Parse(time.RFC3339Nano, at)
		if err1 == nil && err2 == nil {
			out[f] = t
		}
	}
	return out
}

// formatTimes is parseTimes' inverse.
func formatTimes(m map[uint64]time.Time) map[string]string {
	out := make(map[string]string, len(m))
	for f, t := range m {
		out[strconv.FormatUint(f, 10)] = t.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func (g *gapTracker) store(ctx context.Context, k laneKey, st seqState, version int64) error {
	ss := storedState{Noticed: make(map[string]string)}
	if len(st.BowlNoticed) > 0 {
		ss.BowlNoticed = formatTimes(st.BowlNoticed)
	}
	if !st.Seen.IsZero() {
		ss.Seen = st.Seen.UTC().Format(time.RFC3339Nano)
	}
	if st.Forgot.Holes > 0 {
		ss.Forgotten = &st.Forgot
	}
	for _, sp := range st.Spans {
		ss.Spans = append(ss.Spans, [2]uint64{sp.From, sp.To})
	}
	froms := make([]uint64, 0, len(st.Noticed))
	for f := range st.Noticed {
		froms = append(froms, f)
	}
	slices.Sort(froms)
	for _, f := range froms {
		ss.Noticed[strconv.FormatUint(f, 10)] = st.Noticed[f].UTC().Format(time.RFC3339Nano)
	}
	body, err := json.Marshal(ss)
	if err != nil {
		return err
	}
	item := gapKey(k.thing, k.lane)
	item["entity"] = &types.AttributeValueMemberS{Value: GapEntity}
	item["tenant"] = &types.AttributeValueMemberS{Value: k.tenant}
	item["thing"] = &types.AttributeValueMemberS{Value: k.thing}
	item["state"] = &types.AttributeValueMemberS{Value: string(body)}
	item["version"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(version+1, 10)}
	item["updated_at"] = &types.AttributeValueMemberS{Value: g.now().UTC().Format(time.RFC3339Nano)}
	in := &dynamodb.PutItemInput{TableName: aws.String(g.table), Item: item}
	if version == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		in.ConditionExpression = aws.String("version = :v")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)}}
	}
	if _, err := g.db.PutItem(ctx, in); err != nil {
		return fmt.Errorf("store seq state of %s %s: %w", k.thing, k.lane, err)
	}
	return nil
}
