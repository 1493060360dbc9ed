package completeness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
)

// manyBowls is a day of n bowls with the longest names a thing may have
// (wire.MaxNameLen) and a drop of each reason: the largest lines there are.
func manyBowls(n int) catalog.CompletenessStated {
	st := catalog.CompletenessStated{Day: "2026-12-04", Things: map[string]catalog.ThingCounts{}}
	for i := range n {
		th := fmt.Sprintf("gw-%04d:%s", i, strings.Repeat("b", 128-8))
		st.Things[th] = catalog.ThingCounts{Counts: catalog.Counts{Assigned: 4_320_000, Durable: 4_319_000, Dropped: map[string]int64{"disk_cap": 500, "ttl": 400},
			DroppedTotal: 900, Missing: 100, Duplicates: 77_777, RingRefused: 12}, Partial: true, Digest: strings.Repeat(fmt.Sprintf("%x", i%16), 64)}
	}
	st.Digest = DayDigest(st.Things)
	return st
}

// A tenant of 2,000 bowls does not fit one event: the engine refuses it
// whole (what Anchor emitted before the split), and Split cuts it into
// parts each under MaxPartBytes, in bowl order, every bowl in exactly one
// part, each part with the whole day's digest and its number.
func TestSplitKeepsEveryPartUnderTheLimit(t *testing.T) {
	st := manyBowls(2000)
	whole, _ := json.Marshal(st)
	eng, err := engine.New(engine.Config{Client: dynamodb.New(dynamodb.Options{Region: "eu-west-1", Credentials: aws.AnonymousCredentials{}}),
		EventsTable: "events", InboxTable: "inbox", Catalog: catalog.Bowline()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	ctx := engine.WithActor(engine.WithTenant(context.Background(), "t1"), catalog.ProducerCompleteness)
	if _, err := eng.Emit(ctx, catalog.TypeCompletenessStated, st); !errors.Is(err, engine.ErrPayloadTooLarge) {
		t.Fatalf("Emit of the whole day (%d bytes) = %v; want ErrPayloadTooLarge", len(whole), err)
	}

	parts, err := Split(st, MaxPartBytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 2 {
		t.Fatalf("Split of %d bytes = %d parts; want several", len(whole), len(parts))
	}
	seen := map[string]int{}
	last := ""
	for i, p := range parts {
		b, _ := json.Marshal(p)
		if len(b) > MaxPartBytes {
			t.Errorf("part %d: %d bytes; want at most %d", i+1, len(b), MaxPartBytes)
		}
		if p.Part != i+1 || p.Parts != len(parts) || p.Digest != st.Digest || p.Day != st.Day {
			t.Errorf("part %d = part %d of %d, day %s, digest %s; want part %d of %d, day %s, digest %s", i+1, p.Part, p.Parts, p.Day, p.Digest, i+1, len(parts), st.Day, st.Digest)
		}
		for th := range p.Things {
			if th <= last {
				t.Errorf("part %d holds %q, not after the previous part's %q", i+1, th, last)
			}
			seen[th]++
		}
		for th := range p.Things {
			last = max(last, th)
		}
	}
	if len(seen) != len(st.Things) {
		t.Errorf("parts hold %d bowls; want %d", len(seen), len(st.Things))
	}
	for th, n := range seen {
		if n != 1 {
			t.Errorf("bowl %q in %d parts; want 1", th, n)
		}
	}
	t.Logf("%d bowls, %d bytes whole: %d parts of at most %d bytes", len(st.Things), len(whole), len(parts), MaxPartBytes)

	// A day that fits is one event, in the form of before.
	small := manyBowls(3)
	one, err := Split(small, MaxPartBytes)
	if err != nil || len(one) != 1 || one[0].Part != 0 || one[0].Parts != 0 || len(one[0].Things) != 3 {
		t.Fatalf("Split of 3 bowls = %+v, %v; want the statement whole, unnumbered", one, err)
	}
	if _, err := Split(small, 300); !errors.Is(err, ErrBowlTooLarge) {
		t.Errorf("Split with room for no bowl = %v; want ErrBowlTooLarge", err)
	}
}

// fakeEmitter keeps the events as the engine would: once per idempotency
// key, a repeat returning a *DuplicateError with the first fingerprint.
type fakeEmitter struct {
	envs []engine.Envelope
	keys map[string]engine.DuplicateError
}

func (f *fakeEmitter) EmitEvent(_ context.Context, ev engine.Event) (engine.Envelope, error) {
	if d, ok := f.keys[ev.IdempotencyKey]; ok {
		return engine.Envelope{}, &d
	}
	b, err := json.Marshal(ev.Payload)
	if err != nil {
		return engine.Envelope{}, err
	}
	if len(b) > 256<<10 {
		return engine.Envelope{}, engine.ErrPayloadTooLarge
	}
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		return engine.Envelope{}, err
	}
	env := engine.Envelope{ID: fmt.Sprintf("ev-%d", len(f.envs)+1), Seq: uint64(len(f.envs) + 1), Type: ev.Type, Payload: p}
	f.envs = append(f.envs, env)
	if f.keys == nil {
		f.keys = map[string]engine.DuplicateError{}
	}
	f.keys[ev.IdempotencyKey] = engine.DuplicateError{Key: ev.IdempotencyKey, EventID: env.ID, Fingerprint: ev.Fingerprint}
	return env, nil
}

// A split day is emitted part by part under PartKey; the log then states
// it whole. A run that stopped after two parts is finished by the next
// with the rest only; a day that now computes to another digest is not
// finished (ErrPartlyStated), nor is a part another run stated otherwise.
func TestEmitPartsStatesADayOnceAndResumes(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	st := manyBowls(2000)
	parts, err := Split(st, MaxPartBytes)
	if err != nil {
		t.Fatal(err)
	}
	n := len(parts)

	var all fakeEmitter
	r, err := EmitParts(ctx, &all, "t1", day, st, parts, Stated(nil, day))
	if err != nil || len(r.Emitted) != n || r.Parts != n {
		t.Fatalf("EmitParts = %d events, %d parts, %v; want %d, %d, nil", len(r.Emitted), r.Parts, err, n, n)
	}
	for k := 1; k <= n; k++ {
		if _, ok := all.keys[PartKey("t1", day, k)]; !ok {
			t.Errorf("no event under %s", PartKey("t1", day, k))
		}
	}
	if s := Stated(all.envs, day); !s.Complete() || s.Digest != st.Digest || s.Parts != n {
		t.Errorf("Stated after the run = %+v; want all %d parts with digest %s", s, n, st.Digest)
	}
	if s := Stated(all.envs, day.Add(-24*time.Hour)); s.Parts != 0 || s.Complete() {
		t.Errorf("Stated of the day before = %+v; want nothing", s)
	}

	// The run before stopped after parts 1 and 2.
	crashed := &fakeEmitter{}
	if _, err := EmitParts(ctx, crashed, "t1", day, st, parts[:2], Stated(nil, day)); err != nil {
		t.Fatal(err)
	}
	for i := range crashed.envs {
		crashed.envs[i].Payload["parts"] = float64(n) // parts[:2] still say "of n"
	}
	stated := Stated(crashed.envs, day)
	if stated.Complete() || len(stated.Have) != 2 {
		t.Fatalf("Stated after 2 of %d parts = %+v; want incomplete with 2", n, stated)
	}
	before := maps.Clone(crashed.keys)
	r, err = EmitParts(ctx, crashed, "t1", day, st, parts, stated)
	if err != nil || len(r.Emitted) != n-2 {
		t.Fatalf("resume = %d events, %v; want the %d missing parts", len(r.Emitted), err, n-2)
	}
	if len(crashed.keys) != len(before)+n-2 {
		t.Errorf("resume wrote %d keys; want %d", len(crashed.keys)-len(before), n-2)
	}

	// The day changed since parts 1 and 2 were stated.
	other := manyBowls(2001)
	otherParts, _ := Split(other, MaxPartBytes)
	half := &fakeEmitter{envs: crashed.envs[:2]}
	if _, err := EmitParts(ctx, half, "t1", day, other, otherParts, Stated(half.envs, day)); !errors.Is(err, ErrPartlyStated) || len(half.envs) != 2 {
		t.Errorf("resume with another digest = %v, %d events; want ErrPartlyStated and nothing written", err, len(half.envs)-2)
	}
	// A concurrent run stated part 1 with another digest.
	race := &fakeEmitter{keys: map[string]engine.DuplicateError{PartKey("t1", day, 1): {Key: PartKey("t1", day, 1), EventID: "ev-x", Fingerprint: "other"}}}
	if _, err := EmitParts(ctx, race, "t1", day, st, parts, Stated(nil, day)); !errors.Is(err, ErrPartlyStated) {
		t.Errorf("EmitParts over another run's part = %v; want ErrPartlyStated", err)
	}
	// ... or with the same: nothing more to say for that part.
	same := &fakeEmitter{keys: map[string]engine.DuplicateError{PartKey("t1", day, 1): {Key: PartKey("t1", day, 1), EventID: "ev-x", Fingerprint: st.Digest}}}
	if r, err := EmitParts(ctx, same, "t1", day, st, parts, Stated(nil, day)); err != nil || len(r.Emitted) != n-1 {
		t.Errorf("EmitParts over another run's same part = %d events, %v; want %d, nil", len(r.Emitted), err, n-1)
	}
}

// A day is whole until RollupTTL after it began: at the job's hour the
// day before yesterday is the oldest a statement can be true of, and an
// older day is refused.
func TestOldestWholeIsTheDayBeforeYesterday(t *testing.T) {
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	for _, tc := range []struct {
		now  time.Time
		want string
	}{
		{time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC), "2026-12-03"},   // the job's hour
		{time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), "2026-12-03"},   // 12-02's first rows live till 00:30 at most
		{time.Date(2026, 12, 5, 23, 59, 0, 0, time.UTC), "2026-12-03"}, // a run by hand late in the day
		{time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), "2026-12-04"},
	} {
		if got := OldestWhole(tc.now).Format(time.DateOnly); got != tc.want {
			t.Errorf("OldestWhole(%v) = %s; want %s", tc.now, got, tc.want)
		}
	}
	oldest := OldestWhole(time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC))
	if err := CheckDays([]time.Time{day("2026-12-03"), day("2026-12-04")}, oldest); err != nil {
		t.Errorf("CheckDays(the job's two days) = %v; want nil", err)
	}
	err := CheckDays([]time.Time{day("2026-12-02"), day("2026-12-03")}, oldest)
	if !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "2026-12-02") {
		t.Errorf("CheckDays(from 2026-12-02) = %v; want ErrExpired naming 2026-12-02", err)
	}
	if _, _, err := Anchor(context.Background(), nil, Tables{}, &fakeEmitter{}, "t1", nil, []time.Time{day("2026-11-20")}, oldest); !errors.Is(err, ErrExpired) {
		t.Errorf("Anchor of 2026-11-20 = %v; want ErrExpired before reading anything", err)
	}
}

// The days between a tenant's newest statement and the oldest day still
// whole are lost; so are those since its first event when it has none.
// A hole further back is not reported again.
func TestLostDays(t *testing.T) {
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	oldest := day("2026-12-03") // the job of 2026-12-05
	stated := func(d string) engine.Envelope {
		return engine.Envelope{Type: catalog.TypeCompletenessStated, OccurredAt: day(d).Add(49 * time.Hour), Payload: map[string]any{"day": d, "things": map[string]any{}, "digest": "x"}}
	}
	// part k of n of day d: a run that failed between parts left the
	// day partly stated.
	part := func(d string, k, n int) engine.Envelope {
		return engine.Envelope{Type: catalog.TypeCompletenessStated, OccurredAt: day(d).Add(49 * time.Hour), Payload: map[string]any{"day": d, "things": map[string]any{}, "digest": "x", "part": k, "parts": n}}
	}
	other := func(at string) engine.Envelope {
		return engine.Envelope{Type: catalog.TypeTelemetryDropped, OccurredAt: day(at).Add(time.Hour), Payload: map[string]any{}}
	}
	for _, tc := range []struct {
		name     string
		envs     []engine.Envelope
		from, to string
		days     int
	}{
		{"every day stated", []engine.Envelope{other("2026-11-01"), stated("2026-11-30"), stated("2026-12-01"), stated("2026-12-02"), stated("2026-12-03")}, "", "", 0},
		{"one missed run, caught up", []engine.Envelope{other("2026-11-01"), stated("2026-11-30"), stated("2026-12-02"), stated("2026-12-01")}, "", "", 0},
		{"two missed runs", []engine.Envelope{other("2026-11-01"), stated("2026-11-29"), stated("2026-11-30")}, "2026-12-01", "2026-12-02", 2},
		{"an old hole is not reported again", []engine.Envelope{other("2026-11-01"), stated("2026-11-20"), stated("2026-12-02")}, "", "", 0},
		{"statements in reach do not hide a loss", []engine.Envelope{other("2026-11-01"), stated("2026-11-30"), stated("2026-12-03"), stated("2026-12-04")}, "2026-12-01", "2026-12-02", 2},
		{"never stated", []engine.Envelope{other("2026-11-28"), other("2026-12-04")}, "2026-11-28", "2026-12-02", 5},
		{"a new tenant", []engine.Envelope{other("2026-12-03")}, "", "", 0},
		{"a day stated in every part", []engine.Envelope{other("2026-11-01"), stated("2026-12-01"), part("2026-12-02", 2, 2), part("2026-12-02", 1, 2)}, "", "", 0},
		{"a day partly stated is lost", []engine.Envelope{other("2026-11-01"), stated("2026-12-01"), part("2026-12-02", 1, 2)}, "2026-12-02", "2026-12-02", 1},
		{"no log", nil, "", "", 0},
	} {
		got := LostDays(tc.envs, oldest)
		if got.Days != tc.days || (tc.days > 0 && (got.From.Format(time.DateOnly) != tc.from || got.To.Format(time.DateOnly) != tc.to)) {
			t.Errorf("%s: LostDays = %d days %s..%s; want %d days %s..%s", tc.name, got.Days, got.From.Format(time.DateOnly), got.To.Format(time.DateOnly), tc.days, tc.from, tc.to)
		}
	}
}
