package console

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/cloud/durable"
)

// Telemetry resolution and retention in memory. The console reads the
// per-bowl rollups the telemetry consumer writes (cloud/durable, one point
// per bowl and minute), never the stream itself: no page competes with the
// consumer for a shard's five reads a second (docs/telemetry-path.md).
const (
	bucketWidth = time.Minute
	keepSeries  = 25 * time.Hour
	weightKind  = "weight_g"
	// rollupPoll is the pause between two rounds of rollup reads, and
	// rollupsPerRound bounds one round's queries: a console over a large
	// fleet reads each bowl less often, never more than this many a round.
	rollupPoll      = time.Second
	rollupsPerRound = 50
)

// bucket aggregates the weight samples of one bucketWidth.
type bucket struct {
	t        int64 // unix seconds at the bucket's start
	min, max float64
	sum      float64
	n        int32
}

func (b bucket) avg() float64 { return b.sum / float64(b.n) }

// series is one thing's weight readings, one bucket per rollup minute.
type series struct {
	tenant  string
	buckets []bucket // ascending t
	last    time.Time
	value   float64 // the last sample's value
	samples int64
	// polled is when its rollups were last read; next the minute they are
	// read from next time.
	polled time.Time
	next   time.Time
}

// set stores the rollup point of one minute, replacing what an earlier
// read of the same (still filling) minute gave.
func (s *series) set(p durable.Point) {
	k := p.At.Truncate(bucketWidth).Unix()
	b := bucket{t: k, min: p.Min, max: p.Max, sum: p.Mean * float64(p.Count), n: int32(min(p.Count, math.MaxInt32))}
	n := len(s.buckets)
	i := sort.Search(n, func(j int) bool { return s.buckets[j].t >= k })
	switch {
	case i < n && s.buckets[i].t == k:
		s.samples += int64(b.n) - int64(s.buckets[i].n)
		s.buckets[i] = b
	default:
		s.buckets = slices.Insert(s.buckets, i, b)
		s.samples += int64(b.n)
	}
	// A point's time is its minute's start; the newest minute gives the
	// current value (its last sample).
	if at := p.At.Add(bucketWidth - time.Millisecond); !at.Before(s.last) {
		s.last, s.value = at, p.Last
	}
}

func (s *series) prune() {
	if len(s.buckets) == 0 {
		return
	}
	cut := s.last.Add(-keepSeries).Unix()
	i := sort.Search(len(s.buckets), func(j int) bool { return s.buckets[j].t >= cut })
	if i > 0 {
		s.buckets = slices.Delete(s.buckets, 0, i)
	}
}

// maxTelemetryThings bounds the things the console keeps a series of; past
// it, a new thing evicts the one whose newest sample is oldest, so a
// console left running over a growing fleet holds a bounded set.
const maxTelemetryThings = 5000

// telemetryStore is the series of the things seen most recently, at most
// max of them.
type telemetryStore struct {
	mu      sync.RWMutex
	max     int
	things  map[string]*series
	records int64
	// readAt is when the reader last got an answer; behind is the
	// received_at age of the newest record read then.
	readAt time.Time
	newest time.Time
}

func newTelemetryStore() *telemetryStore {
	return &telemetryStore{max: maxTelemetryThings, things: map[string]*series{}}
}

// addPoints adds thing's rollup points read at readAt.
func (ts *telemetryStore) addPoints(thing, tenant string, pts []durable.Point, readAt time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s := ts.series(thing, tenant)
	s.polled = readAt
	for _, p := range pts {
		if p.Kind != weightKind || p.Count == 0 {
			continue
		}
		s.set(p)
		ts.records++
		if p.At.After(ts.newest) {
			ts.newest = p.At
		}
		// The newest minute may still be filling: read it again.
		if p.At.After(s.next) {
			s.next = p.At
		}
	}
	s.prune()
	ts.readAt = readAt
}

// series returns thing's series, making room for a new one. ts.mu held.
func (ts *telemetryStore) series(thing, tenant string) *series {
	s := ts.things[thing]
	if s == nil {
		if len(ts.things) >= ts.max {
			ts.evictStalest()
		}
		s = &series{tenant: tenant}
		ts.things[thing] = s
	}
	return s
}

// due returns up to n of things, those read longest ago first, with the
// minute each is to be read from (zero: never read).
func (ts *telemetryStore) due(things map[string]string, n int) []pollTarget {
	ts.mu.RLock()
	out := make([]pollTarget, 0, len(things))
	for th, tenant := range things {
		pt := pollTarget{thing: th, tenant: tenant}
		if s := ts.things[th]; s != nil {
			pt.polled, pt.from = s.polled, s.next
		}
		out = append(out, pt)
	}
	ts.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].polled.Before(out[j].polled) })
	return out[:min(n, len(out))]
}

// pollTarget is one bowl to read the rollups of.
type pollTarget struct {
	thing, tenant string
	polled, from  time.Time
}

// evictStalest removes the thing whose newest sample is oldest (a scan:
// it runs only when a new thing arrives at the bound). ts.mu held.
func (ts *telemetryStore) evictStalest() {
	var (
		oldest string
		at     time.Time
	)
	for k, s := range ts.things {
		if oldest == "" || s.last.Before(at) {
			oldest, at = k, s.last
		}
	}
	delete(ts.things, oldest)
}

// seriesView is a copy of what a page needs of one thing's series.
type seriesView struct {
	Thing   string
	Tenant  string
	Last    time.Time
	Value   float64
	Samples int64
	Buckets []bucket
}

// view copies thing's buckets from since on (zero: none, only the
// figures).
func (ts *telemetryStore) view(thing string, since time.Time) (seriesView, bool) {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	s, ok := ts.things[thing]
	if !ok {
		return seriesView{Thing: thing}, false
	}
	v := seriesView{Thing: thing, Tenant: s.tenant, Last: s.last, Value: s.value, Samples: s.samples}
	if !since.IsZero() {
		k := since.Unix()
		i := sort.Search(len(s.buckets), func(j int) bool { return s.buckets[j].t >= k })
		v.Buckets = slices.Clone(s.buckets[i:])
	}
	return v, true
}

// thingTenants returns each thing seen in the stream and its tenant.
func (ts *telemetryStore) thingTenants() map[string]string {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	out := make(map[string]string, len(ts.things))
	for k, s := range ts.things {
		out[k] = s.tenant
	}
	return out
}

func (ts *telemetryStore) status() (records int64, readAt, newest time.Time) {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return ts.records, ts.readAt, ts.newest
}

// rollupReader reads the bowls' rollups (cloud/durable.ReadRollups) into
// the store, a bounded number of bowls a round, each from the minute it
// last saw on.
type rollupReader struct {
	db     durable.RollupReader
	table  string
	things func() map[string]string
	now    func() time.Time
	store  *telemetryStore
	log    *slog.Logger
	// outages, when set, learns whether the rollups answer.
	outages *outages
}

// run reads until ctx ends.
func (r *rollupReader) run(ctx context.Context) {
	for ctx.Err() == nil {
		r.round(ctx)
		sleep(ctx, rollupPoll)
	}
}

// round reads the rollups of the bowls read longest ago.
func (r *rollupReader) round(ctx context.Context) {
	now := r.now()
	for _, pt := range r.store.due(r.things(), rollupsPerRound) {
		from := pt.from
		if from.IsZero() {
			from = now.Add(-keepSeries)
		}
		// Rollups are stamped with the gateway's clock, which may run a
		// little ahead of ours.
		pts, err := durable.ReadRollups(ctx, r.db, r.table, pt.thing, from, now.Add(time.Hour))
		if r.outages != nil && ctx.Err() == nil {
			r.outages.note(sourceRollups, "DynamoDB table "+r.table, "", err, time.Now())
		}
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("console: read rollups", "thing", pt.thing, "err", err)
			}
			continue
		}
		r.store.addPoints(pt.thing, pt.tenant, pts, time.Now())
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
