package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
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

// maxHours bounds the hours one bowl's rollup holds in memory: the rows'
// TTL.
const maxHours = int(RollupTTL / time.Hour)

// stats is one kind's rollup of one minute.
type stats struct {
	N    int64    `json:"n"`
	Min  *float64 `json:"min,omitempty"`
	Max  *float64 `json:"max,omitempty"`
	Sum  *float64 `json:"sum,omitempty"`
	Last float64  `json:"last"`
	// T is the Unix milliseconds of the last value.
	T int64 `json:"t"`
}

// minutes is an hour's rollup: per minute ("00".."59") per kind.
type minutes map[string]map[string]*stats

func (s *stats) add(kind string, at time.Time, v float64) {
	s.N++
	if kind == KindWeight {
		if s.Min == nil {
			s.Min, s.Max, s.Sum = new(float64), new(float64), new(float64)
			*s.Min, *s.Max = v, v
		}
		*s.Min, *s.Max, *s.Sum = min(*s.Min, v), max(*s.Max, v), *s.Sum+v
	}
	if ms := at.UnixMilli(); s.N == 1 || ms >= s.T {
		s.Last, s.T = v, ms
	}
}

// merged returns a and b folded into one, neither changed.
func merged(a, b *stats) *stats {
	if a == nil {
		c := *b
		return &c
	}
	c := *a
	c.N += b.N
	if b.Min != nil {
		if c.Min == nil {
			mn, mx, sm := *b.Min, *b.Max, *b.Sum
			c.Min, c.Max, c.Sum = &mn, &mx, &sm
		} else {
			mn, mx, sm := min(*c.Min, *b.Min), max(*c.Max, *b.Max), *c.Sum+*b.Sum
			c.Min, c.Max, c.Sum = &mn, &mx, &sm
		}
	}
	if b.T >= c.T {
		c.Last, c.T = b.Last, b.T
	}
	return &c
}

func (m minutes) fold(o minutes) minutes {
	out := minutes{}
	for _, src := range []minutes{m, o} {
		for min, kinds := range src {
			if out[min] == nil {
				out[min] = map[string]*stats{}
			}
			for k, s := range kinds {
				out[min][k] = merged(out[min][k], s)
			}
		}
	}
	return out
}

// hourRollup is one rollup row: what it held when last read or written
// (base, with its version; known says whether base is the row's content),
// the minutes of a write not known to have landed (sending, named by
// token), and what arrived since (delta).
//
// A put whose answer was lost (a timeout; or the SDK retried it and met
// its own row) may have landed: the next attempt puts the same minutes
// under the same token, and a conflict whose row carries that token means
// they are in. Only if another process also wrote the row in between
// would they count twice.
type hourRollup struct {
	hour    time.Time
	known   bool
	version int64
	base    minutes
	sending minutes
	token   string
	delta   minutes
}

// idle reports whether h holds nothing unwritten.
func (h *hourRollup) idle() bool { return len(h.delta) == 0 && h.sending == nil }

// bowlRollup is one bowl's rollups in memory. Unwritten minutes live only
// here: a lost process loses them, which costs presentation data only
// (the samples are in the stream).
type bowlRollup struct {
	// mu guards hours and written; held across the bowl's writes.
	mu      sync.Mutex
	thing   string
	hours   map[time.Time]*hourRollup
	written time.Time // wall clock of the last write
	// evicted: dropped from the cache, to be written regardless of
	// RollupEvery.
	evicted atomic.Bool
}

func (b *bowlRollup) pending() bool {
	for _, h := range b.hours {
		if !h.idle() {
			return true
		}
	}
	return false
}

// add rolls one new sample into its minute. A sample whose row would
// already have expired is left out.
func (b *bowlRollup) add(at time.Time, kind string, v float64, now time.Time) {
	hour := at.UTC().Truncate(time.Hour)
	if hour.Add(time.Hour + RollupTTL).Before(now) {
		return
	}
	h := b.hours[hour]
	if h == nil {
		h = &hourRollup{hour: hour, delta: minutes{}}
		b.hours[hour] = h
		b.trim()
	}
	min := fmt.Sprintf("%02d", at.UTC().Minute())
	if h.delta[min] == nil {
		h.delta[min] = map[string]*stats{}
	}
	s := h.delta[min][kind]
	if s == nil {
		s = &stats{}
		h.delta[min][kind] = s
	}
	s.add(kind, at, v)
}

// trim drops the oldest hours with nothing unwritten past maxHours.
func (b *bowlRollup) trim() {
	if len(b.hours) <= maxHours {
		return
	}
	hs := make([]time.Time, 0, len(b.hours))
	for t := range b.hours {
		hs = append(hs, t)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Before(hs[j]) })
	for _, t := range hs {
		if len(b.hours) <= maxHours {
			return
		}
		if b.hours[t].idle() {
			delete(b.hours, t)
		}
	}
}

// bowl returns thing's rollups, creating them.
func (c *Consumer) bowl(thing string) *bowlRollup {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.bowls.get(thing); ok {
		return b
	}
	b := &bowlRollup{thing: thing, hours: map[time.Time]*hourRollup{}}
	c.bowls.put(thing, b)
	return b
}

// writeRollup writes every hour of b with minutes unwritten, each with
// optimistic locking: a row this process has not read is put only if
// absent, and on a conflict it is read and the unwritten minutes folded
// in again. It returns the first error; the hours not written keep their
// minutes for the next time.
func (c *Consumer) writeRollup(ctx context.Context, b *bowlRollup, now time.Time) error {
	var errs []error
	for _, h := range b.hours {
		if h.idle() {
			continue
		}
		if err := c.writeHour(ctx, b.thing, h, now); err != nil {
			c.obs.RollupWrite("error")
			errs = append(errs, err)
		}
	}
	b.written = now
	b.evicted.Store(false)
	for t, h := range b.hours {
		if h.idle() && t.Add(time.Hour+RollupTTL).Before(now) {
			delete(b.hours, t)
		}
	}
	return errors.Join(errs...)
}

func (c *Consumer) writeHour(ctx context.Context, thing string, h *hourRollup, now time.Time) error {
	if h.sending == nil {
		h.sending, h.delta = h.delta, minutes{}
		h.token = c.id + "-" + strconv.FormatUint(c.writes.Add(1), 10)
	}
	for attempt := 0; ; attempt++ {
		all := h.base.fold(h.sending)
		body, err := json.Marshal(all)
		if err != nil {
			return err
		}
		item := rollupKey(thing, h.hour)
		item["entity"] = &types.AttributeValueMemberS{Value: RollupEntity}
		item["thing"] = &types.AttributeValueMemberS{Value: thing}
		item["minutes"] = &types.AttributeValueMemberS{Value: string(body)}
		item["version"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(h.version+1, 10)}
		item["write"] = &types.AttributeValueMemberS{Value: h.token}
		item["ttl"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(h.hour.Add(time.Hour+RollupTTL).Unix(), 10)}
		in := &dynamodb.PutItemInput{TableName: aws.String(c.cfg.Table), Item: item}
		if !h.known || h.version == 0 {
			in.ConditionExpression = aws.String("attribute_not_exists(pk)")
		} else {
			in.ConditionExpression = aws.String("version = :v")
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(h.version, 10)}}
		}
		cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
		_, err = c.cfg.DB.PutItem(cctx, in)
		cancel()
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) && attempt < 5 {
			c.obs.RollupWrite("conflict")
			landed, err := c.readHour(ctx, thing, h)
			if err != nil {
				return err
			}
			if landed {
				h.sending, h.token = nil, ""
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("write rollup of %s hour %s: %w", thing, h.hour.Format(HourLayout), err)
		}
		c.obs.RollupWrite("ok")
		h.base, h.known, h.sending, h.token = all, true, nil, ""
		h.version++
		return nil
	}
}

// readHour replaces h's base with the row's content. landed reports that
// the row is h's own pending write (its token): the minutes sent are in it.
func (c *Consumer) readHour(ctx context.Context, thing string, h *hourRollup) (landed bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	out, err := c.cfg.DB.GetItem(cctx, &dynamodb.GetItemInput{TableName: aws.String(c.cfg.Table), Key: rollupKey(thing, h.hour), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, fmt.Errorf("read rollup of %s hour %s: %w", thing, h.hour.Format(HourLayout), err)
	}
	h.base, h.version, h.known = minutes{}, 0, true
	if out.Item == nil {
		return false, nil
	}
	h.base, h.version = decodeRollupItem(out.Item)
	w, _ := out.Item["write"].(*types.AttributeValueMemberS)
	return w != nil && w.Value == h.token, nil
}

func decodeRollupItem(item map[string]types.AttributeValue) (minutes, int64) {
	m := minutes{}
	if v, ok := item["minutes"].(*types.AttributeValueMemberS); ok {
		_ = json.Unmarshal([]byte(v.Value), &m) // an unreadable row is overwritten afresh
	}
	var version int64
	if v, ok := item["version"].(*types.AttributeValueMemberN); ok {
		version, _ = strconv.ParseInt(v.Value, 10, 64)
	}
	return m, version
}

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

// ReadRollups returns thing's rollup points of the minutes in [from, to),
// sorted by time then kind, from table (resources.Names.TelemetryTable).
// The rows lag the stream by up to the consumer's RollupEvery, and live
// RollupTTL after their hour. Without a deadline on ctx it applies 10 s.
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
			":from": &types.AttributeValueMemberS{Value: from.Truncate(time.Hour).Format(HourLayout)},
			":to":   &types.AttributeValueMemberS{Value: to.Add(-time.Nanosecond).Truncate(time.Hour).Format(HourLayout)},
		},
	}
	var pts []Point
	for {
		out, err := ddb.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("read rollups of %s: %w", thing, err)
		}
		for _, item := range out.Items {
			sk, _ := item["sk"].(*types.AttributeValueMemberS)
			if sk == nil {
				continue
			}
			hour, err := time.Parse(HourLayout, sk.Value)
			if err != nil {
				continue
			}
			m, _ := decodeRollupItem(item)
			for min, kinds := range m {
				n, err := strconv.Atoi(min)
				if err != nil {
					continue
				}
				at := hour.Add(time.Duration(n) * time.Minute)
				if at.Before(from.Truncate(time.Minute)) || !at.Before(to) {
					continue
				}
				for kind, s := range kinds {
					p := Point{At: at, Kind: kind, Count: s.N, Last: s.Last}
					if s.Min != nil && s.N > 0 {
						p.Min, p.Max, p.Mean = *s.Min, *s.Max, *s.Sum/float64(s.N)
					}
					pts = append(pts, p)
				}
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	sort.Slice(pts, func(i, j int) bool {
		if !pts[i].At.Equal(pts[j].At) {
			return pts[i].At.Before(pts[j].At)
		}
		return pts[i].Kind < pts[j].Kind
	})
	return pts, nil
}
