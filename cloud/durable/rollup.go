package durable

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// KindWeight is the kind whose rollup keeps min, max and mean; every
// other kind keeps its count and last value.
const KindWeight = "weight_g"

// RollupSlack is how long after a rollup window ends its row is written:
// the window's last samples reach the consumer a batch interval (one
// minute) and the stream's lag after they were taken. Samples of the
// window that come later still count: they go in a row of their own.
const RollupSlack = 5 * time.Minute

// stats is one kind's rollup of one minute.
type stats struct {
	N   int64
	Min float64 // Min, Max and Sum are kept for KindWeight only
	Max float64
	Sum float64
	// Last is the latest value; T its Unix milliseconds.
	Last float64
	T    int64
}

// minutes is a window's rollup: per minute (offset from the window's
// start) per kind.
type minutes map[int]map[string]*stats

func (s *stats) add(kind string, at time.Time, v float64) {
	s.N++
	if kind == KindWeight {
		if s.N == 1 {
			s.Min, s.Max = v, v
		}
		s.Min, s.Max, s.Sum = min(s.Min, v), max(s.Max, v), s.Sum+v
	}
	if ms := at.UnixMilli(); s.N == 1 || ms >= s.T {
		s.Last, s.T = v, ms
	}
}

// merge folds b into s (two rows' counts of one minute and kind).
func (s *stats) merge(kind string, b *stats) {
	if kind == KindWeight {
		if s.N == 0 {
			s.Min, s.Max = b.Min, b.Max
		}
		s.Min, s.Max, s.Sum = min(s.Min, b.Min), max(s.Max, b.Max), s.Sum+b.Sum
	}
	if s.N == 0 || b.T >= s.T {
		s.Last, s.T = b.Last, b.T
	}
	s.N += b.N
}

// windowRollup is one bowl's unwritten minutes of one window: those of a
// put not known to have landed (sending, under the row's token) and
// what arrived since (delta).
type windowRollup struct {
	start   time.Time
	sending minutes
	token   string
	delta   minutes
	// tally and sendingTally are the seqs and duplicates of delta and
	// sending (completeness.go).
	tally, sendingTally tally
}

// idle reports whether w holds nothing unwritten.
func (w *windowRollup) idle() bool {
	return len(w.delta) == 0 && w.sending == nil && w.tally.empty()
}

// bowlRollup is one bowl's unwritten rollups in memory, per window. A
// lost process loses them, which costs presentation data only (the
// samples are in the stream).
type bowlRollup struct {
	// mu guards windows; held across the bowl's writes.
	mu      sync.Mutex
	thing   string
	windows map[time.Time]*windowRollup
	// evicted: dropped from the cache, to be written whether its windows
	// have closed or not.
	evicted atomic.Bool
}

func (b *bowlRollup) pending() bool {
	for _, w := range b.windows {
		if !w.idle() {
			return true
		}
	}
	return false
}

// add rolls one new sample into its minute of its window of length
// window. A sample whose row would already have expired is left out.
func (b *bowlRollup) add(at time.Time, kind string, v float64, window time.Duration, now time.Time) {
	at = at.UTC()
	w := b.windowOf(at, window, now)
	if w == nil {
		return
	}
	start := w.start
	off := int(at.Sub(start) / time.Minute)
	if w.delta[off] == nil {
		w.delta[off] = map[string]*stats{}
	}
	s := w.delta[off][kind]
	if s == nil {
		s = &stats{}
		w.delta[off][kind] = s
	}
	s.add(kind, at, v)
}

// windowOf returns the window of at, creating it; nil when its row would
// already have expired.
func (b *bowlRollup) windowOf(at time.Time, window time.Duration, now time.Time) *windowRollup {
	start := at.UTC().Truncate(window)
	if start.Add(window + RollupTTL).Before(now) {
		return nil
	}
	w := b.windows[start]
	if w == nil {
		w = &windowRollup{start: start, delta: minutes{}}
		b.windows[start] = w
	}
	return w
}

// note counts one sample of outbox's seq taken at at (the gateway's
// clock, corrected) in its window's tally: a new seq, or a duplicate
// collapsed.
func (b *bowlRollup) note(at time.Time, outbox string, seq uint64, dup bool, window time.Duration, now time.Time) {
	w := b.windowOf(at, window, now)
	if w == nil {
		return
	}
	if dup {
		w.tally.Dups++
		return
	}
	w.tally.addSeq(outbox, seq)
}

// window is the length of a rollup window: RollupEvery, or a minute when
// rollups are written at every call (so that a reader of the last minutes
// meets only the rows of the last minutes).
func (c *Consumer) window() time.Duration {
	if c.cfg.RollupEvery > 0 {
		return c.cfg.RollupEvery
	}
	return time.Minute
}

// bowl returns thing's rollups, creating them.
func (c *Consumer) bowl(thing string) *bowlRollup {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.bowls.get(thing); ok {
		return b
	}
	b := &bowlRollup{thing: thing, windows: map[time.Time]*windowRollup{}}
	c.bowls.put(thing, b)
	return b
}

// writeRollup writes the windows of b with minutes unwritten that are due:
// every one when all is set, else those that ended RollupSlack before now.
// It returns the first error; the windows not written keep their minutes
// for the next time.
func (c *Consumer) writeRollup(ctx context.Context, b *bowlRollup, now time.Time, all bool) error {
	var errs []error
	for start, w := range b.windows {
		if !all && now.Before(start.Add(c.window()+RollupSlack)) {
			continue
		}
		if w.idle() {
			delete(b.windows, start)
			continue
		}
		if err := c.writeWindow(ctx, b.thing, w); err != nil {
			c.obs.RollupWrite("error")
			errs = append(errs, err)
			continue
		}
		if w.idle() {
			delete(b.windows, start)
		}
	}
	b.evicted.Store(false)
	return errors.Join(errs...)
}

// due reports whether b holds minutes of a window that ended RollupSlack
// before now.
func (c *Consumer) due(b *bowlRollup, now time.Time) bool {
	for start, w := range b.windows {
		if !w.idle() && !now.Before(start.Add(c.window()+RollupSlack)) {
			return true
		}
	}
	return false
}

// writeWindow puts w's unwritten minutes as a row of their own, once: the
// row's sort key carries the write's token, so no row is rewritten and
// none is read first. A put whose answer was lost is put again under the
// same token, the same row.
func (c *Consumer) writeWindow(ctx context.Context, thing string, w *windowRollup) error {
	if w.sending == nil {
		w.sending, w.delta = w.delta, minutes{}
		w.sendingTally, w.tally = w.tally, tally{}
		w.token = c.id + "-" + strconv.FormatUint(c.writes.Add(1), 36)
	}
	end := w.start.Add(c.window())
	item := rollupKey(thing, end, w.token)
	item["entity"] = &types.AttributeValueMemberS{Value: RollupEntity}
	item["m"] = &types.AttributeValueMemberB{Value: encodeMinutes(w.start, end, w.sending)}
	item["ttl"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(end.Add(RollupTTL).Unix(), 10)}
	if !w.sendingTally.empty() {
		item["c"] = &types.AttributeValueMemberS{Value: w.sendingTally.encode()}
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	_, err := c.cfg.DB.PutItem(cctx, &dynamodb.PutItemInput{TableName: aws.String(c.cfg.Table), Item: item})
	cancel()
	if err != nil {
		return fmt.Errorf("write rollup of %s window %s: %w", thing, w.start.Format(RollupLayout), err)
	}
	c.obs.RollupWrite("ok")
	w.sending, w.token, w.sendingTally = nil, "", tally{}
	return nil
}

// rollupFormat is the first byte of a row's "m" attribute.
const rollupFormat = 1

// encodeMinutes encodes m (minutes of the window [start, end)) as the
// row's "m": the format byte, then per kind (sorted) its name and its
// minutes (sorted), each as varints of milli-units: minutes before end
// (1 for the window's last minute), count, last, the last value's
// milliseconds into its minute, and for weight_g last - min, max - last
// and sum - count x last. A minute of weight_g takes about 15 bytes, so
// a bowl's 30-minute window fits one 1 KB write unit with its keys.
// Values keep three decimals (milligrams).
func encodeMinutes(start, end time.Time, m minutes) []byte {
	byKind := map[string][]int{}
	for off, kinds := range m {
		for k := range kinds {
			byKind[k] = append(byKind[k], off)
		}
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	b := []byte{rollupFormat}
	for _, k := range kinds {
		offs := byKind[k]
		slices.Sort(offs)
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(offs)))
		for _, off := range offs {
			s := m[off][k]
			at := start.Add(time.Duration(off) * time.Minute)
			last := milli(s.Last)
			b = binary.AppendUvarint(b, uint64(end.Sub(at)/time.Minute))
			b = binary.AppendUvarint(b, uint64(s.N))
			b = binary.AppendVarint(b, last)
			b = binary.AppendVarint(b, s.T-at.UnixMilli())
			if k == KindWeight {
				b = binary.AppendVarint(b, last-milli(s.Min))
				b = binary.AppendVarint(b, milli(s.Max)-last)
				b = binary.AppendVarint(b, milli(s.Sum)-s.N*last)
			}
		}
	}
	return b
}

// errRollupRow is a row's "m" that does not decode.
var errRollupRow = errors.New("rollup row does not decode")

// decodeMinutes decodes a row's "m" (encodeMinutes) of the window ending
// at end: per minute (its start) per kind.
func decodeMinutes(end time.Time, b []byte) (map[time.Time]map[string]*stats, error) {
	if len(b) == 0 || b[0] != rollupFormat {
		return nil, fmt.Errorf("%w: format %v", errRollupRow, b[:min(len(b), 1)])
	}
	b = b[1:]
	var bad bool
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			bad, b = true, nil
			return 0
		}
		b = b[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			bad, b = true, nil
			return 0
		}
		b = b[n:]
		return v
	}
	m := map[time.Time]map[string]*stats{}
	for len(b) > 0 && !bad {
		kl := uv()
		if bad || kl > uint64(len(b)) {
			return nil, fmt.Errorf("%w: kind of %d bytes", errRollupRow, kl)
		}
		k := string(b[:kl])
		b = b[kl:]
		for n := uv(); n > 0 && !bad; n-- {
			before := uv()
			at := end.Add(-time.Duration(before) * time.Minute)
			s := &stats{N: int64(uv())}
			last := sv()
			s.Last = unmilli(last)
			s.T = at.UnixMilli() + sv()
			if k == KindWeight {
				s.Min, s.Max, s.Sum = unmilli(last-sv()), unmilli(last+sv()), unmilli(sv()+s.N*last)
			}
			if bad || before < 1 || before > uint64(maxRollupWindow/time.Minute) {
				bad = true
				break
			}
			if m[at] == nil {
				m[at] = map[string]*stats{}
			}
			m[at][k] = s
		}
	}
	if bad {
		return nil, fmt.Errorf("%w: truncated", errRollupRow)
	}
	return m, nil
}

func milli(v float64) int64   { return int64(math.Round(v * 1000)) }
func unmilli(v int64) float64 { return float64(v) / 1000 }

// Point is one minute of one kind of a bowl's rollup.
type Point struct {
	// At is the start of the minute, UTC.
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	// Count is the number of samples in the minute.
	Count int64 `json:"count"`
	// Min, Max and Mean are set for KindWeight only (zero otherwise).
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
	// Last is the value of the minute's latest sample.
	Last float64 `json:"last"`
}

// RollupReader is the part of DynamoDB ReadRollups uses.
type RollupReader interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// maxRollupWindow is the longest rollup window (Config.RollupEvery): a
// row holds minutes of at most this long before its sort key's time.
const maxRollupWindow = time.Hour

// ReadRollups returns thing's rollup points of the minutes in [from, to),
// sorted by time then kind, from table (resources.Names.TelemetryTable),
// with one Query of the rows whose window ends in (from, to + 1 h]: the
// windows in the range, and at most one more per late write. The rows
// lag the stream by up to the consumer's RollupEvery plus RollupSlack,
// and live RollupTTL after their window. Rows of the old layout (one per
// hour, rewritten whole, before 2026-12-04) are skipped. Without a
// deadline on ctx it applies 10 s.
func ReadRollups(ctx context.Context, ddb RollupReader, table, thing string, from, to time.Time) ([]Point, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	from, to = from.UTC(), to.UTC()
	if !from.Before(to) {
		return nil, nil
	}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(table),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :from AND :to"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":   &types.AttributeValueMemberS{Value: RollupPK(thing)},
			":from": &types.AttributeValueMemberS{Value: from.Truncate(time.Minute).Add(time.Minute).Format(RollupLayout)},
			":to":   &types.AttributeValueMemberS{Value: to.Add(-time.Nanosecond).Truncate(time.Minute).Add(maxRollupWindow).Format(RollupLayout) + "#~"},
		},
	}
	type key struct {
		at   time.Time
		kind string
	}
	folded := map[key]*stats{}
	for {
		out, err := ddb.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("read rollups of %s: %w", thing, err)
		}
		for _, item := range out.Items {
			end, ok := rollupEnd(item)
			if !ok {
				continue // the old layout, or not a rollup row
			}
			raw, _ := item["m"].(*types.AttributeValueMemberB)
			if raw == nil {
				continue
			}
			m, err := decodeMinutes(end, raw.Value)
			if err != nil {
				continue // presentation data: a bad row shows as a gap
			}
			for at, kinds := range m {
				if at.Before(from.Truncate(time.Minute)) || !at.Before(to) {
					continue
				}
				for kind, s := range kinds {
					k := key{at, kind}
					if folded[k] == nil {
						folded[k] = &stats{}
					}
					folded[k].merge(kind, s)
				}
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	pts := make([]Point, 0, len(folded))
	for k, s := range folded {
		p := Point{At: k.at, Kind: k.kind, Count: s.N, Last: s.Last}
		if k.kind == KindWeight && s.N > 0 {
			p.Min, p.Max, p.Mean = s.Min, s.Max, s.Sum/float64(s.N)
		}
		pts = append(pts, p)
	}
	sort.Slice(pts, func(i, j int) bool {
		if !pts[i].At.Equal(pts[j].At) {
			return pts[i].At.Before(pts[j].At)
		}
		return pts[i].Kind < pts[j].Kind
	})
	return pts, nil
}

// rollupEnd is the window end of a rollup row's sort key
// ("<window end>#<token>"); false for any other row.
func rollupEnd(item map[string]types.AttributeValue) (time.Time, bool) {
	sk, _ := item["sk"].(*types.AttributeValueMemberS)
	if sk == nil {
		return time.Time{}, false
	}
	at, _, ok := strings.Cut(sk.Value, "#")
	if !ok {
		return time.Time{}, false
	}
	end, err := time.Parse(RollupLayout, at)
	return end, err == nil
}
