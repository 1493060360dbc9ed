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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Lanes whose seqs are tracked: the topic kinds.
const (
	LaneTelemetry = wire.KindTelemetry
	LaneEvents    = wire.KindEvents
)

// span is an inclusive range of seqs.
type span struct{ From, To uint64 }

// seqState is what is known about one thing's lane: the seqs that arrived
// (or were accounted for: dropped at the edge, or reported as a gap) as
// sorted, disjoint, non-adjacent spans, and when each hole between them was
// first noticed, by the hole's first seq.
type seqState struct {
	Spans   []span
	Noticed map[uint64]time.Time
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

// due notes when each hole was first seen (now, for new ones), forgets
// notes of holes that closed, and returns the holes missing for longer than
// grace with the time they were first noticed.
func (s *seqState) due(now time.Time, grace time.Duration) (holes []span, since []time.Time) {
	notes := make(map[uint64]time.Time)
	for _, h := range s.holes() {
		t, ok := s.Noticed[h.From]
		if !ok {
			t = now
		}
		notes[h.From] = t
		if now.Sub(t) >= grace {
			holes, since = append(holes, h), append(since, t)
		}
	}
	s.Noticed = notes
	return holes, since
}

// GapDB is the part of DynamoDB the gap tracker uses; safe for concurrent use.
type GapDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

type laneKey struct{ tenant, thing, lane string }

// DataGap is one missing range of a thing's lane, as raised in bowl.data_gap.
type DataGap struct {
	Thing        string    `json:"thing"`
	Lane         string    `json:"lane"`
	FromSeq      uint64    `json:"from_seq"`
	ToSeq        uint64    `json:"to_seq"`
	MissingSince time.Time `json:"missing_since"`
}

// gapTracker merges observed seqs into the shared rows and raises gaps.
type gapTracker struct {
	db    GapDB
	table string
	grace time.Duration
	now   func() time.Time
	raise func(ctx context.Context, tenant string, g DataGap) error
	log   *slog.Logger

	mu      sync.Mutex
	pending map[laneKey][]span
	watch   map[laneKey]bool // keys that had holes at their last sync
}

func newGapTracker(db GapDB, table string, grace time.Duration, now func() time.Time, log *slog.Logger, raise func(context.Context, string, DataGap) error) *gapTracker {
	return &gapTracker{db: db, table: table, grace: grace, now: now, raise: raise, log: log,
		pending: make(map[laneKey][]span), watch: make(map[laneKey]bool)}
}

// Observe records that seqs from..to of thing's lane are durable.
func (g *gapTracker) Observe(tenant, thing, lane string, from, to uint64) {
	k := laneKey{tenant, thing, lane}
	g.mu.Lock()
	g.pending[k] = append(g.pending[k], span{from, to})
	g.mu.Unlock()
}

// Flush merges everything observed into the shared rows and raises the
// gaps that are due. It returns the first error; keys that failed are kept
// for the next flush.
func (g *gapTracker) Flush(ctx context.Context) error {
	g.mu.Lock()
	work := g.pending
	g.pending = make(map[laneKey][]span)
	for k := range g.watch {
		if _, ok := work[k]; !ok {
			work[k] = nil
		}
	}
	g.mu.Unlock()
	var errs []error
	for k, spans := range work {
		open, err := g.sync(ctx, k, spans)
		g.mu.Lock()
		if err != nil {
			g.pending[k] = append(g.pending[k], spans...)
			errs = append(errs, err)
		} else if open {
			g.watch[k] = true
		} else {
			delete(g.watch, k)
		}
		g.mu.Unlock()
	}
	return errors.Join(errs...)
}

// sync merges spans into k's row with optimistic locking and raises due
// gaps; it reports whether holes remain.
func (g *gapTracker) sync(ctx context.Context, k laneKey, spans []span) (bool, error) {
	for attempt := 0; ; attempt++ {
		st, version, err := g.load(ctx, k)
		if err != nil {
			return false, err
		}
		for _, sp := range spans {
			st.add(sp.From, sp.To)
		}
		if len(st.Spans) == 0 {
			return false, nil
		}
		holes, since := st.due(g.now(), g.grace)
		for i, h := range holes {
			gap := DataGap{Thing: k.thing, Lane: k.lane, FromSeq: h.From, ToSeq: h.To, MissingSince: since[i].UTC()}
			if err := g.raise(ctx, k.tenant, gap); err != nil {
				return true, fmt.Errorf("raise data gap %s %s %d..%d: %w", k.thing, k.lane, h.From, h.To, err)
			}
			st.add(h.From, h.To)
		}
		if len(holes) > 0 {
			st.due(g.now(), g.grace) // forget the notes of closed holes
		}
		err = g.store(ctx, k, st, version)
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) && attempt < 20 {
			continue // another ingest process wrote the row: merge again
		}
		if err != nil {
			return false, err
		}
		return len(st.Spans) > 1, nil
	}
}

type storedState struct {
	Spans   [][2]uint64       `json:"spans"`
	Noticed map[string]string `json:"noticed,omitempty"`
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
	st := seqState{Noticed: make(map[uint64]time.Time)}
	for _, sp := range ss.Spans {
		st.Spans = append(st.Spans, span{sp[0], sp[1]})
	}
	for from, at := range ss.Noticed {
		f, err1 := strconv.ParseUint(from, 10, 64)
		t, err2 := time.Parse(time.RFC3339Nano, at)
		if err1 == nil && err2 == nil {
			st.Noticed[f] = t
		}
	}
	return st, version, nil
}

func (g *gapTracker) store(ctx context.Context, k laneKey, st seqState, version int64) error {
	ss := storedState{Noticed: make(map[string]string)}
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
