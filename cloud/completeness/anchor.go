package completeness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/engine"
)

// Emitter is the engine's Emit; *engine.Engine is one.
type Emitter interface {
	EmitEvent(ctx context.Context, ev engine.Event) (engine.Envelope, error)
}

var _ Emitter = (*engine.Engine)(nil)

// MaxPartBytes bounds the JSON of one audit.completeness_stated payload:
// under the engine's default Config.MaxPayloadBytes (256 KiB), so the
// event row stays far below DynamoDB's 400 KB item limit with its
// envelope. About 800 bowls fit in one part (docs/completeness.md).
const MaxPartBytes = 200_000

// Errors of the daily statement.
var (
	// ErrPartlyStated: some parts of a day are in the chain and the day
	// now computes to another statement (other bowls or counts), so the
	// missing parts cannot be added without contradicting the stated ones.
	ErrPartlyStated = errors.New("day partly stated with another digest")
	// ErrBowlTooLarge: one bowl's line alone exceeds the part bound.
	ErrBowlTooLarge = errors.New("bowl line too large for one part")
	// ErrExpired: a day older than OldestWhole; some of its rollup rows
	// may be gone, so its counts would be wrong for good.
	ErrExpired = errors.New("day's rollups have begun to expire")
)

// IdempotencyKey is the key a tenant's day is stated under when it fits
// one event: once per (tenant, day), however often the job runs.
func IdempotencyKey(tenant string, day time.Time) string {
	return "completeness/" + tenant + "/" + day.UTC().Format(time.DateOnly)
}

// PartKey is the key of part k (from 1) of a day stated in several
// events; a day of one part uses IdempotencyKey.
func PartKey(tenant string, day time.Time, k int) string {
	return IdempotencyKey(tenant, day) + "/part-" + strconv.Itoa(k)
}

// State computes tenant's day, audit.completeness_stated's payload: every thing in things and every thing its
// event log names (a bowl event's thing, catalog.ThingOf).
func State(ctx context.Context, db DB, tables Tables, tenant string, things []string, day time.Time) (catalog.CompletenessStated, error) {
	envs, err := readLog(ctx, db, tables.Events, tenant)
	if err != nil {
		return catalog.CompletenessStated{}, err
	}
	return stateFrom(ctx, db, tables, envs, things, day)
}

// stateFrom states day from the tenant's log envs (read once for all the
// days of a run) and the bowls' rollups.
func stateFrom(ctx context.Context, db DB, tables Tables, envs []engine.Envelope, things []string, day time.Time) (catalog.CompletenessStated, error) {
	all := slices.Clone(things)
	for _, e := range envs {
		if th, err := catalog.ThingOf(e); err == nil && th != "" {
			all = append(all, th)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	st := catalog.CompletenessStated{Day: day.UTC().Format(time.DateOnly), Things: map[string]catalog.ThingCounts{}}
	for _, th := range all {
		t, err := durable.ReadDay(ctx, db, tables.Telemetry, th, day)
		if err != nil {
			return catalog.CompletenessStated{}, err
		}
		drops, refused := FromEvents(envs, th, day)
		s := durable.Account(th, day, t, drops, refused)
		st.Things[th] = catalog.ThingCounts{Counts: s.Counts, Partial: s.Partial, Digest: s.Digest()}
	}
	st.Digest = DayDigest(st.Things)
	return st, nil
}

// DayDigest is SHA-256 over the bowls' "<thing>:<digest>\n" lines, sorted
// by thing: the digest of the whole day, which every part carries.
func DayDigest(things map[string]catalog.ThingCounts) string {
	names := make([]string, 0, len(things))
	for th := range things {
		names = append(names, th)
	}
	slices.Sort(names)
	var lines strings.Builder
	for _, th := range names {
		fmt.Fprintf(&lines, "%s:%s\n", th, things[th].Digest)
	}
	sum := sha256.Sum256([]byte(lines.String()))
	return hex.EncodeToString(sum[:])
}

// Split divides a day's statement into payloads of at most maxBytes of
// JSON each, bowls in name order, so the same statement always splits
// the same way. A statement that fits is returned whole, without Part and
// Parts (the one-event form); otherwise part k of n holds its bowls, the
// day and the whole day's Digest, with Part k and Parts n. A bowl whose
// line alone does not fit is ErrBowlTooLarge.
func Split(st catalog.CompletenessStated, maxBytes int) ([]catalog.CompletenessStated, error) {
	whole, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode the statement of %s: %w", st.Day, err)
	}
	if len(whole) <= maxBytes {
		return []catalog.CompletenessStated{st}, nil
	}
	// The frame of a part: everything but its bowls, with room for part
	// numbers up to 6 digits each.
	frame, err := json.Marshal(catalog.CompletenessStated{Day: st.Day, Digest: st.Digest, Things: map[string]catalog.ThingCounts{}, Part: 999_999, Parts: 999_999})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(st.Things))
	for th := range st.Things {
		names = append(names, th)
	}
	slices.Sort(names)
	var parts []catalog.CompletenessStated
	cur, size := map[string]catalog.ThingCounts{}, len(frame)
	for _, th := range names {
		k, _ := json.Marshal(th)
		v, err := json.Marshal(st.Things[th])
		if err != nil {
			return nil, fmt.Errorf("encode bowl %q of %s: %w", th, st.Day, err)
		}
		line := len(k) + 1 + len(v) + 1 // "thing":{...},
		if len(frame)+line > maxBytes {
			return nil, fmt.Errorf("%w: bowl %q of %s: %d bytes; a part holds at most %d", ErrBowlTooLarge, th, st.Day, line, maxBytes)
		}
		if size+line > maxBytes {
			parts = append(parts, catalog.CompletenessStated{Day: st.Day, Things: cur, Digest: st.Digest})
			cur, size = map[string]catalog.ThingCounts{}, len(frame)
		}
		cur[th] = st.Things[th]
		size += line
	}
	parts = append(parts, catalog.CompletenessStated{Day: st.Day, Things: cur, Digest: st.Digest})
	for i := range parts {
		parts[i].Part, parts[i].Parts = i+1, len(parts)
	}
	return parts, nil
}

// Result is what Anchor did for one day.
type Result struct {
	// Statement is the whole day (all parts' bowls), or, for a day stated
	// before this run, only its Day.
	Statement catalog.CompletenessStated
	// Parts is how many events state the day.
	Parts int
	// Emitted are the events this run wrote, in part order.
	Emitted []engine.Envelope
	// Already: every part was in the chain before this run; nothing was
	// read for the day nor written.
	Already bool
}

// OldestWhole returns the oldest UTC day whose rollup rows are all still
// stored at now, the oldest day a statement can be true of. A row lives
// durable.RollupTTL after its window ends and a day's first window ends
// after the day begins, so day D is whole until D + RollupTTL at least;
// from then on a Query may miss its first rows (DynamoDB deletes expired
// items when it gets to them, so the result would not even be repeatable).
func OldestWhole(now time.Time) time.Time {
	return now.UTC().Add(-durable.RollupTTL).Truncate(24 * time.Hour).Add(24 * time.Hour)
}

// CheckDays returns ErrExpired naming the first of days older than
// oldest (OldestWhole).
func CheckDays(days []time.Time, oldest time.Time) error {
	for _, d := range days {
		if d.Before(oldest) {
			return fmt.Errorf("%w: %s (rollup rows live %g days after their window; the oldest day still whole is %s)",
				ErrExpired, d.UTC().Format(time.DateOnly), durable.RollupTTL.Hours()/24, oldest.UTC().Format(time.DateOnly))
		}
	}
	return nil
}

// Lost is a run of days a tenant's log leaves unstated that no run can
// state any more: their rollups have begun to expire.
type Lost struct {
	// From and To are the first and the last lost day (UTC midnight).
	From, To time.Time
	// Days is how many days From..To holds; 0 when none is lost.
	Days int
}

// LostDays returns the days before oldest (OldestWhole) that tenant's log
// envs leaves unstated: the days after the newest day it states in full
// (every part) before oldest or, when it states none, from the day of its
// first event. A day partly stated (a run that failed between parts) is
// lost too: its other bowls' counts can no longer be stated. Holes
// further back are not searched: each lost day is found by the runs of
// the one UTC day in which it falls out of reach (oldest moves past it),
// however many of them there are, and by no later run once one has
// stated the days in reach, so a daily job reports it once.
func LostDays(envs []engine.Envelope, oldest time.Time) Lost {
	oldest = oldest.UTC().Truncate(24 * time.Hour)
	var from time.Time
	stated := map[time.Time]Statement{} // the days before oldest
	for _, e := range envs {
		if from.IsZero() {
			from = e.OccurredAt.UTC().Truncate(24 * time.Hour)
		}
		if e.Type != catalog.TypeCompletenessStated {
			continue
		}
		p, err := catalog.Decode[catalog.CompletenessStated](e)
		if err != nil {
			continue
		}
		d, err := time.Parse(time.DateOnly, p.Day)
		if err != nil || !d.Before(oldest) {
			continue
		}
		st := stated[d]
		if st.Have == nil {
			st.Have = map[int]bool{}
		}
		st.Have[max(p.Part, 1)], st.Parts = true, max(p.Parts, 1) // as Stated reads them
		stated[d] = st
	}
	for d, st := range stated {
		if next := d.Add(24 * time.Hour); st.Complete() && next.After(from) {
			from = next
		}
	}
	if from.IsZero() || !from.Before(oldest) {
		return Lost{}
	}
	to := oldest.Add(-24 * time.Hour)
	return Lost{From: from, To: to, Days: int(to.Sub(from)/(24*time.Hour)) + 1}
}

// Anchor states each of tenant's days and emits it as
// audit.completeness_stated through em, once per (tenant, day): it reads
// the tenant's log once, skips a day the log already states in full, and
// for a day partly stated (a run that failed between parts) emits the
// missing parts only if the day computes to the same digest, else
// ErrPartlyStated. A day before oldest (OldestWhole) is ErrExpired. A
// statement over MaxPartBytes is split (Split); each part's idempotency
// key (PartKey) and fingerprint (the day's digest) make a concurrent
// run's repeat write nothing. It stops at the first day that fails,
// returning the days done before it. It also returns the days before
// oldest the log left unstated (LostDays), which no run can state now.
func Anchor(ctx context.Context, db DB, tables Tables, em Emitter, tenant string, things []string, days []time.Time, oldest time.Time) ([]Result, Lost, error) {
	if err := CheckDays(days, oldest); err != nil {
		return nil, Lost{}, fmt.Errorf("state tenant %q: %w", tenant, err)
	}
	envs, err := readLog(ctx, db, tables.Events, tenant)
	if err != nil {
		return nil, Lost{}, err
	}
	lost := LostDays(envs, oldest)
	var out []Result
	for _, day := range days {
		r, err := anchorDay(ctx, db, tables, em, envs, tenant, things, day)
		if err != nil {
			return out, lost, err
		}
		out = append(out, r)
	}
	return out, lost, nil
}

func anchorDay(ctx context.Context, db DB, tables Tables, em Emitter, envs []engine.Envelope, tenant string, things []string, day time.Time) (Result, error) {
	d := day.UTC().Format(time.DateOnly)
	stated := Stated(envs, day)
	if stated.Complete() {
		return Result{Statement: catalog.CompletenessStated{Day: d, Digest: stated.Digest}, Parts: stated.Parts, Already: true}, nil
	}
	st, err := stateFrom(ctx, db, tables, envs, things, day)
	if err != nil {
		return Result{}, fmt.Errorf("state tenant %q's %s: %w", tenant, d, err)
	}
	parts, err := Split(st, MaxPartBytes)
	if err != nil {
		return Result{}, fmt.Errorf("state tenant %q's %s: %w", tenant, d, err)
	}
	return EmitParts(ctx, em, tenant, day, st, parts, stated)
}

// EmitParts emits the parts of day's statement st (Split's output) that
// stated does not hold yet, in order.
func EmitParts(ctx context.Context, em Emitter, tenant string, day time.Time, st catalog.CompletenessStated, parts []catalog.CompletenessStated, stated Statement) (Result, error) {
	d := day.UTC().Format(time.DateOnly)
	if len(stated.Have) > 0 && (stated.Digest != st.Digest || stated.Parts != len(parts)) {
		return Result{}, fmt.Errorf("%w: tenant %q's %s: parts %v of %d stated with digest %s; the day now computes to %d parts, digest %s (state the rest by hand, docs/completeness.md)",
			ErrPartlyStated, tenant, d, stated.Numbers(), stated.Parts, stated.Digest, len(parts), st.Digest)
	}
	r := Result{Statement: st, Parts: len(parts)}
	ectx := engine.WithActor(engine.WithTenant(ctx, tenant), catalog.ProducerCompleteness)
	for i, p := range parts {
		k := i + 1
		if stated.Have[k] {
			continue
		}
		key := IdempotencyKey(tenant, day)
		if len(parts) > 1 {
			key = PartKey(tenant, day, k)
		}
		env, err := em.EmitEvent(ectx, engine.Event{Type: catalog.TypeCompletenessStated, Payload: p, IdempotencyKey: key, Fingerprint: st.Digest})
		var dup *engine.DuplicateError
		switch {
		case errors.As(err, &dup) && (dup.Fingerprint == "" || dup.Fingerprint == st.Digest):
			continue // a concurrent run stated it, the same way
		case errors.As(err, &dup):
			return r, fmt.Errorf("%w: tenant %q's %s: part %d was stated (event %s) with digest %s; the day now computes to %s", ErrPartlyStated, tenant, d, k, dup.EventID, dup.Fingerprint, st.Digest)
		case err != nil:
			return r, fmt.Errorf("anchor completeness of tenant %q for %s, part %d of %d: %w", tenant, d, k, len(parts), err)
		}
		r.Emitted = append(r.Emitted, env)
	}
	return r, nil
}

// Statement is what a tenant's log already states of one day.
type Statement struct {
	// Parts is the number of parts the day was split into (1 for the
	// one-event form); 0 when nothing is stated.
	Parts int
	// Digest is the whole day's digest the stated parts carry.
	Digest string
	// Have holds the stated part numbers, from 1.
	Have map[int]bool
}

// Complete says every part of the day is stated.
func (s Statement) Complete() bool { return s.Parts > 0 && len(s.Have) >= s.Parts }

// Numbers returns the stated part numbers in order.
func (s Statement) Numbers() []int {
	var ks []int
	for k := range s.Have {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Stated reads from a tenant's log envs which parts of day are stated
// (audit.completeness_stated events of that day; one without part numbers
// is part 1 of 1).
func Stated(envs []engine.Envelope, day time.Time) Statement {
	d := day.UTC().Format(time.DateOnly)
	s := Statement{Have: map[int]bool{}}
	for _, e := range envs {
		if e.Type != catalog.TypeCompletenessStated {
			continue
		}
		p, err := catalog.Decode[catalog.CompletenessStated](e)
		if err != nil || p.Day != d {
			continue
		}
		k, n := max(p.Part, 1), max(p.Parts, 1)
		s.Have[k], s.Parts = true, n
		s.Digest = p.Digest
	}
	return s
}
