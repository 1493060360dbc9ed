package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
)

// tally is what a rollup row adds for completeness (docs/completeness.md):
// the seqs of the samples it counts, per outbox, and the duplicates the
// consumer collapsed in its window. It rides on the row the consumer puts
// anyway, so accounting costs no write of its own.
type tally struct {
	Seqs map[string]spanSet
	Dups int64
}

func (t *tally) empty() bool { return len(t.Seqs) == 0 && t.Dups == 0 }

func (t *tally) addSeq(outbox string, seq uint64) {
	if t.Seqs == nil {
		t.Seqs = map[string]spanSet{}
	}
	t.Seqs[outbox] = t.Seqs[outbox].add(seq, seq)
}

// storedTally is the JSON of a rollup row's "c" attribute.
type storedTally struct {
	Seqs map[string][][2]uint64 `json:"seqs,omitempty"`
	Dups int64                  `json:"dups,omitempty"`
}

func (t *tally) encode() string {
	st := storedTally{Dups: t.Dups}
	if len(t.Seqs) > 0 {
		st.Seqs = map[string][][2]uint64{}
		for ob, s := range t.Seqs {
			st.Seqs[ob] = toPairs(s)
		}
	}
	b, _ := json.Marshal(st) // maps of strings and numbers always marshal
	return string(b)
}

func decodeTally(s string) (tally, error) {
	var st storedTally
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return tally{}, err
	}
	t := tally{Dups: st.Dups, Seqs: map[string]spanSet{}}
	for ob, p := range st.Seqs {
		t.Seqs[ob] = fromPairs(p)
	}
	return t, nil
}

// DayTally is what the consumer's rollup rows say of one thing's UTC day
// on the bowl's clock: samples durable in the stream (new seqs, counted
// once), their seqs per outbox, and the duplicates collapsed.
type DayTally struct {
	Durable int64
	Dups    int64
	Seqs    map[string][][2]uint64
	// Rows is how many rollup rows were read; RowsWithoutSeqs those of the
	// layout before accounting (counted in Durable, not in Seqs).
	Rows, RowsWithoutSeqs int
}

// ReadDay reads thing's rollup rows whose windows lie in day (a UTC
// day, bowl clock) with one Query and folds their counts and tallies.
// Windows divide an hour, so no window straddles two days: a row belongs
// to the day its window ends in, except the window ending at midnight,
// which is the day before's.
func ReadDay(ctx context.Context, ddb RollupReader, table, thing string, day time.Time) (DayTally, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	start := day.UTC().Truncate(24 * time.Hour)
	in := &dynamodb.QueryInput{
		TableName:              aws.String(table),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :from AND :to"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":   &types.AttributeValueMemberS{Value: RollupPK(thing)},
			":from": &types.AttributeValueMemberS{Value: start.Add(time.Minute).Format(RollupLayout)},
			":to":   &types.AttributeValueMemberS{Value: start.Add(24*time.Hour).Format(RollupLayout) + "#~"},
		},
	}
	out := DayTally{Seqs: map[string][][2]uint64{}}
	seqs := map[string]spanSet{}
	for {
		page, err := ddb.Query(ctx, in)
		if err != nil {
			return DayTally{}, fmt.Errorf("read rollups of %s for %s: %w", thing, start.Format(time.DateOnly), err)
		}
		for _, item := range page.Items {
			end, ok := rollupEnd(item)
			if !ok {
				continue
			}
			out.Rows++
			// A row with a tally counts its new seqs; one without (the
			// layout before accounting) its minutes' samples. The two agree:
			// a seq is new in one row only, and both leave out samples too
			// old for a row.
			c, _ := item["c"].(*types.AttributeValueMemberS)
			t, err := tally{}, error(nil)
			if c != nil {
				t, err = decodeTally(c.Value)
			}
			if c == nil || err != nil {
				out.RowsWithoutSeqs++
				out.Durable += rowSamples(item, end)
				continue
			}
			out.Dups += t.Dups
			for ob, s := range t.Seqs {
				for _, sp := range s {
					out.Durable += int64(sp.To - sp.From + 1)
				}
				seqs[ob] = seqs[ob].union(s)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	for ob, s := range seqs {
		out.Seqs[ob] = toPairs(s)
	}
	return out, nil
}

// rowSamples is the samples a rollup row's minutes count.
func rowSamples(item map[string]types.AttributeValue, end time.Time) int64 {
	raw, _ := item["m"].(*types.AttributeValueMemberB)
	if raw == nil {
		return 0
	}
	m, err := decodeMinutes(end, raw.Value)
	if err != nil {
		return 0
	}
	var n int64
	for _, kinds := range m {
		for _, s := range kinds {
			n += s.N
		}
	}
	return n
}

// Drop is a range of seqs the gateway dropped unsent (bowl.telemetry_dropped)
// or the MCU could not hand over, with its reason.
type Drop struct {
	FromSeq, ToSeq uint64
	Reason         string
}

// Statement is one thing's completeness for one UTC day on the bowl's
// clock (docs/completeness.md).
type Statement struct {
	Thing string `json:"thing"`
	Day   string `json:"day"`
	catalog.Counts
	// Outboxes is the durable seq spans per outbox, [first, last].
	Outboxes map[string][][2]uint64 `json:"outboxes"`
	// Partial: some rows predate the accounting layout, so Assigned and
	// Missing undercount.
	Partial bool `json:"partial,omitempty"`
}

// Account states thing's completeness for day from the day's tally and the
// drops and MCU ring refusals reported that day. A drop's seqs inside an outbox's range fill its
// holes (they were assigned and never sent); outside every range they add
// to Assigned. Drops carry no outbox id: with several outboxes in a day a
// drop is matched against each outbox's holes in turn.
func Account(thing string, day time.Time, t DayTally, drops []Drop, ringRefused int64) Statement {
	st := Statement{Thing: thing, Day: day.UTC().Format(time.DateOnly),
		Counts:   catalog.Counts{Durable: t.Durable, Duplicates: t.Dups, RingRefused: ringRefused, Dropped: map[string]int64{}},
		Outboxes: t.Seqs, Partial: t.RowsWithoutSeqs > 0}
	if st.Outboxes == nil {
		st.Outboxes = map[string][][2]uint64{}
	}
	var holes []span
	for _, pairs := range t.Seqs {
		s := fromPairs(pairs)
		if len(s) == 0 {
			continue
		}
		st.Assigned += int64(s[len(s)-1].To - s[0].From + 1)
		holes = append(holes, s.holes()...)
	}
	var holeSeqs int64
	for _, h := range holes {
		holeSeqs += int64(h.To - h.From + 1)
	}
	var filled int64
	for _, d := range drops {
		if d.ToSeq < d.FromSeq {
			continue
		}
		n := int64(d.ToSeq - d.FromSeq + 1)
		reason := d.Reason
		if reason == "" {
			reason = "unknown"
		}
		st.Dropped[reason] += n
		st.DroppedTotal += n
		in := int64(0)
		for _, h := range holes {
			lo, hi := max(h.From, d.FromSeq), min(h.To, d.ToSeq)
			if lo <= hi {
				in += int64(hi - lo + 1)
			}
		}
		filled += in
		st.Assigned += n - in
	}
	st.Missing = max(0, holeSeqs-filled)
	return st
}

// Digest is a SHA-256 of the statement's counts and spans in a fixed order,
// so a statement anchored in a chain can be compared with one recomputed
// later.
func (s Statement) Digest() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%d|%d|%d|%d|%d|%d", s.Thing, s.Day, s.Assigned, s.Durable, s.DroppedTotal, s.Missing, s.Duplicates, s.RingRefused)
	reasons := make([]string, 0, len(s.Dropped))
	for r := range s.Dropped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(&b, "|drop:%s=%d", r, s.Dropped[r])
	}
	obs := make([]string, 0, len(s.Outboxes))
	for ob := range s.Outboxes {
		obs = append(obs, ob)
	}
	sort.Strings(obs)
	for _, ob := range obs {
		fmt.Fprintf(&b, "|%s:%v", ob, s.Outboxes[ob])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}
