package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// Telemetry resolution and retention in memory.
const (
	bucketWidth  = 10 * time.Second
	keepSeries   = 25 * time.Hour
	weightKind   = "weight_g"
	emptyPoll    = 500 * time.Millisecond // Kinesis allows 5 reads/s per shard
	relistShards = 30 * time.Second
)

// bucket aggregates the weight samples of one bucketWidth.
type bucket struct {
	t        int64 // unix seconds at the bucket's start
	min, max float64
	sum      float64
	n        int32
}

func (b bucket) avg() float64 { return b.sum / float64(b.n) }

// series is one thing's weight readings, downsampled.
type series struct {
	tenant  string
	buckets []bucket // ascending t
	last    time.Time
	value   float64 // the last sample's value
	samples int64
	// seen drops records Kinesis delivers twice (at-least-once), by the
	// seq of their first sample.
	seen    map[uint64]struct{}
	maxSeen uint64
}

func (s *series) add(t time.Time, v float64) {
	k := t.Truncate(bucketWidth).Unix()
	n := len(s.buckets)
	i := n
	if n == 0 || s.buckets[n-1].t < k {
		s.buckets = append(s.buckets, bucket{t: k, min: v, max: v})
		i = n
	} else {
		i = sort.Search(n, func(j int) bool { return s.buckets[j].t >= k })
		if i == n || s.buckets[i].t != k {
			s.buckets = slices.Insert(s.buckets, i, bucket{t: k, min: v, max: v})
		}
	}
	b := &s.buckets[i]
	b.min, b.max = math.Min(b.min, v), math.Max(b.max, v)
	b.sum += v
	b.n++
	s.samples++
	if !t.Before(s.last) {
		s.last, s.value = t, v
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
	if len(s.seen) > 4096 {
		for k := range s.seen {
			if k+1_000_000 < s.maxSeen {
				delete(s.seen, k)
			}
		}
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

// telemetryRecord is ingest's Kinesis record (docs/contract.md, "Queues,
// streams and pipes").
type telemetryRecord struct {
	Tenant     string    `json:"tenant"`
	Thing      string    `json:"thing"`
	Seq        uint64    `json:"seq"`
	LastSeq    uint64    `json:"last_seq"`
	ReceivedAt time.Time `json:"received_at"`
	Samples    []struct {
		T     time.Time `json:"t"`
		Kind  string    `json:"kind"`
		Value float64   `json:"value"`
	} `json:"samples"`
}

// addRecords decodes and adds Kinesis records; it returns how many it
// could not decode.
func (ts *telemetryStore) addRecords(recs []ktypes.Record) int {
	bad := 0
	decoded := make([]telemetryRecord, 0, len(recs))
	for _, r := range recs {
		var tr telemetryRecord
		if err := json.Unmarshal(r.Data, &tr); err != nil || tr.Thing == "" {
			bad++
			continue
		}
		decoded = append(decoded, tr)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, tr := range decoded {
		s := ts.things[tr.Thing]
		if s == nil {
			if len(ts.things) >= ts.max {
				ts.evictStalest()
			}
			s = &series{tenant: tr.Tenant, seen: map[uint64]struct{}{}}
			ts.things[tr.Thing] = s
		}
		if _, dup := s.seen[tr.Seq]; dup {
			continue
		}
		s.seen[tr.Seq] = struct{}{}
		s.maxSeen = max(s.maxSeen, tr.Seq)
		for _, sm := range tr.Samples {
			if sm.Kind == weightKind && !sm.T.IsZero() {
				s.add(sm.T, sm.Value)
			}
		}
		s.prune()
		ts.records++
		if tr.ReceivedAt.After(ts.newest) {
			ts.newest = tr.ReceivedAt
		}
	}
	ts.readAt = time.Now()
	return bad
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

// telemetryReader follows every shard of the telemetry stream.
type telemetryReader struct {
	kin       Kinesis
	stream    string
	fromStart bool
	store     *telemetryStore
	log       *slog.Logger
}

// run reads until ctx ends, starting a reader per shard and looking for
// new shards (resharding) now and then.
func (r *telemetryReader) run(ctx context.Context) error {
	started := map[string]bool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(relistShards)
	defer t.Stop()
	for first := true; ; first = false {
		shards, err := r.listShards(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("console: list telemetry shards", "stream", r.stream, "err", err)
		}
		for _, sh := range shards {
			id := aws.ToString(sh.ShardId)
			if started[id] {
				continue
			}
			started[id] = true
			// A shard that appears later (a reshard's child) is read from
			// its start.
			fromStart := r.fromStart || !first
			wg.Go(func() { r.readShard(ctx, id, fromStart) })
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (r *telemetryReader) listShards(ctx context.Context) ([]ktypes.Shard, error) {
	var out []ktypes.Shard
	in := &kinesis.ListShardsInput{StreamName: aws.String(r.stream)}
	for {
		page, err := r.kin.ListShards(ctx, in)
		if err != nil {
			return out, fmt.Errorf("list shards of %s: %w", r.stream, err)
		}
		out = append(out, page.Shards...)
		if page.NextToken == nil {
			return out, nil
		}
		in = &kinesis.ListShardsInput{NextToken: page.NextToken}
	}
}

// readShard reads one shard until ctx ends or the shard closes.
func (r *telemetryReader) readShard(ctx context.Context, shard string, fromStart bool) {
	typ := ktypes.ShardIteratorTypeLatest
	if fromStart {
		typ = ktypes.ShardIteratorTypeTrimHorizon
	}
	var after string // the last sequence number read, to resume
	iter := ""
	for ctx.Err() == nil {
		if iter == "" {
			in := &kinesis.GetShardIteratorInput{StreamName: aws.String(r.stream), ShardId: aws.String(shard), ShardIteratorType: typ}
			if after != "" {
				in.ShardIteratorType, in.StartingSequenceNumber = ktypes.ShardIteratorTypeAfterSequenceNumber, aws.String(after)
			}
			out, err := r.kin.GetShardIterator(ctx, in)
			if err != nil {
				r.pause(ctx, "get shard iterator", shard, err)
				continue
			}
			iter = aws.ToString(out.ShardIterator)
		}
		out, err := r.kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String(iter), Limit: aws.Int32(1000)})
		if err != nil {
			var expired *ktypes.ExpiredIteratorException
			if errors.As(err, &expired) {
				iter = ""
				continue
			}
			r.pause(ctx, "get records", shard, err)
			iter = ""
			continue
		}
		if n := len(out.Records); n > 0 {
			after = aws.ToString(out.Records[n-1].SequenceNumber)
			if bad := r.store.addRecords(out.Records); bad > 0 {
				r.log.Debug("console: undecodable telemetry records", "shard", shard, "count", bad)
			}
		} else {
			r.store.addRecords(nil)
		}
		if out.NextShardIterator == nil {
			return // the shard was closed by a reshard
		}
		iter = aws.ToString(out.NextShardIterator)
		if len(out.Records) < 1000 {
			sleep(ctx, emptyPoll)
		}
	}
}

func (r *telemetryReader) pause(ctx context.Context, what, shard string, err error) {
	if ctx.Err() != nil {
		return
	}
	r.log.Warn("console: telemetry reader", "op", what, "stream", r.stream, "shard", shard, "err", err)
	sleep(ctx, 2*time.Second)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
