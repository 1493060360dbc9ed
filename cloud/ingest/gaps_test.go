package ingest

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestSeqStateAddMerges(t *testing.T) {
	var s seqState
	for _, sp := range []span{{5, 5}, {1, 2}, {3, 3}, {10, 12}, {7, 8}, {11, 20}} {
		s.add(sp.From, sp.To)
	}
	want := []span{{1, 3}, {5, 5}, {7, 8}, {10, 20}}
	if !reflect.DeepEqual(s.Spans, want) {
		t.Fatalf("spans = %v; want %v", s.Spans, want)
	}
	if got, want := s.holes(), []span{{4, 4}, {6, 6}, {9, 9}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("holes = %v; want %v", got, want)
	}
}

func TestSeqStateDueAfterGrace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var s seqState
	s.add(1, 10)
	s.add(15, 20)
	if h, _ := s.due(t0, time.Time{}, time.Minute); len(h) != 0 {
		t.Fatalf("due at first sight = %v; want none", h)
	}
	s.add(11, 12) // the hole shrinks to 13..14 and is a new hole
	if h, _ := s.due(t0.Add(30*time.Second), time.Time{}, time.Minute); len(h) != 0 {
		t.Fatalf("due within grace = %v; want none", h)
	}
	h, since := s.due(t0.Add(91*time.Second), time.Time{}, time.Minute)
	if want := []span{{13, 14}}; !reflect.DeepEqual(h, want) || !since[0].Equal(t0.Add(30*time.Second)) {
		t.Fatalf("due after grace = %v since %v; want %v since %v", h, since, want, t0.Add(30*time.Second))
	}
	s.add(13, 14)
	if h, _ := s.due(t0.Add(200*time.Second), time.Time{}, time.Minute); len(h) != 0 || len(s.Noticed) != 0 {
		t.Fatalf("after the hole filled: due %v, notes %v; want none", h, s.Noticed)
	}
}

// memGapDB is an in-memory GapDB that ignores conditions; fail makes every
// call fail.
type memGapDB struct {
	mu    sync.Mutex
	items map[string]map[string]types.AttributeValue
	fail  bool
	puts  int
}

func (m *memGapDB) id(key map[string]types.AttributeValue) string {
	return key["pk"].(*types.AttributeValueMemberS).Value + "|" + key["sk"].(*types.AttributeValueMemberS).Value
}

func (m *memGapDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return nil, errors.New("injected outage")
	}
	return &dynamodb.GetItemOutput{Item: m.items[m.id(in.Key)]}, nil
}

func (m *memGapDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return nil, errors.New("injected outage")
	}
	m.items[m.id(in.Item)] = in.Item
	m.puts++
	return &dynamodb.PutItemOutput{}, nil
}

func newMemTracker(db *memGapDB, maxSpans int) *gapTracker {
	noRaise := func(context.Context, string, DataGap) error { return errors.New("no gap may be raised here") }
	return newGapTracker(db, "app", time.Hour, maxSpans, time.Now, slog.New(slog.DiscardHandler), noRaise)
}

// A message is acknowledged only once its seqs are in the row: while the
// row cannot be written, nothing is acknowledged and the work is kept.
func TestRecordAcksOnlyAfterRowWritten(t *testing.T) {
	db := &memGapDB{items: map[string]map[string]types.AttributeValue{}, fail: true}
	g := newMemTracker(db, 1000)
	var acked atomic.Int32
	k := laneKey{"t", "bowl-1", LaneEvents}
	for s := uint64(1); s <= 10; s++ {
		g.Record(func() { acked.Add(1) }, observation{key: k, from: s, to: s})
	}
	if err := g.writeRound(context.Background()); err == nil {
		t.Fatal("writeRound during an outage = nil; want the error")
	}
	if n := acked.Load(); n != 0 {
		t.Fatalf("acks during the outage = %d; want 0", n)
	}
	db.mu.Lock()
	db.fail = false
	db.mu.Unlock()
	if err := g.writeRound(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := acked.Load(); n != 10 {
		t.Fatalf("acks after the row was written = %d; want 10", n)
	}
	if db.puts != 1 {
		t.Errorf("puts = %d; want 1 (one write per lane per round)", db.puts)
	}
	st, _, err := g.load(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	if want := []span{{1, 10}}; !reflect.DeepEqual(st.Spans, want) {
		t.Errorf("row spans = %v; want %v", st.Spans, want)
	}
}

// A device that sends every other seq cannot grow its row past DynamoDB's
// 400 KB item limit: past GapMaxSpans the oldest holes are merged away and
// counted.
func TestSeqRowBoundedForEveryOtherSeq(t *testing.T) {
	db := &memGapDB{items: map[string]map[string]types.AttributeValue{}}
	g := newMemTracker(db, 1000)
	k := laneKey{"t", "bowl-1", LaneEvents}
	const msgs = 5000
	base := uint64(1) << 40 // long seqs make the longest JSON
	for i := range uint64(msgs) {
		g.Record(nil, observation{key: k, from: base + 2*i, to: base + 2*i})
		if i%100 == 99 {
			if err := g.writeRound(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, _, err := g.load(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Spans) > 1000 {
		t.Fatalf("row holds %d spans; want at most 1000", len(st.Spans))
	}
	if got, want := st.Forgot.Holes, msgs-1000; got != want {
		t.Errorf("forgotten holes = %d; want %d", got, want)
	}
	size := 0
	for name, v := range db.items[db.id(gapKey(k.thing, k.lane))] {
		size += len(name)
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			size += len(s.Value)
		}
	}
	if size > 200<<10 {
		t.Errorf("row is %d bytes; want well under DynamoDB's 400 KB", size)
	}
	t.Logf("row of %d spans: %d bytes", len(st.Spans), size)
}

// bowl.data_gap is stamped on the gateway's (bowl's) clock, not the wall
// clock ingest runs on: missing_since is the corrected gateway time of the
// last event before the hole, here a simulated day in 2030 while the wall
// clock is in 2026 (docs/clock.md; issue 23 section 1).
func TestGapStampedWithGatewayClock(t *testing.T) {
	db := &memGapDB{items: map[string]map[string]types.AttributeValue{}}
	wall := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return wall }
	var raised []DataGap
	raise := func(_ context.Context, _ string, g DataGap) error { raised = append(raised, g); return nil }
	g := newGapTracker(db, "app", time.Hour, 1000, now, slog.New(slog.DiscardHandler), raise)
	k := laneKey{"t", "bowl-1", LaneEvents}
	bowl := time.Date(2030, 6, 1, 8, 0, 0, 0, time.UTC)
	ctx := context.Background()
	for _, s := range []uint64{1, 2, 3, 7, 8} {
		g.Record(nil, observation{key: k, from: s, to: s, at: bowl.Add(time.Duration(s) * time.Minute)})
		if err := g.writeRound(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	wall = wall.Add(2 * time.Hour) // past the grace, on the wall clock
	mu.Unlock()
	if err := g.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if len(raised) != 1 {
		t.Fatalf("gaps raised = %v; want one (4..6)", raised)
	}
	want := bowl.Add(3 * time.Minute) // seq 3, the last event before the hole
	if gp := raised[0]; gp.FromSeq != 4 || gp.ToSeq != 6 || !gp.MissingSince.Equal(want) {
		t.Fatalf("gap = %d..%d missing since %s; want 4..6 since %s (the bowl's clock, not the wall's)", gp.FromSeq, gp.ToSeq, gp.MissingSince, want)
	}
}
