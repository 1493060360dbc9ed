package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestEmitCommitsEventAndWritesTogether(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)
	ctx := engine.WithCorrelationID(ctxFor(t, tenant), "req-7")
	for i, pk := range []string{"ORDER#" + tenant + "#1", "ORDER#" + tenant + "#2"} {
		env, err := f.engine.Emit(ctx, "com.payment_completed", map[string]any{"order_id": pk},
			putApp(f.names.AppTable(), pk, "attribute_not_exists(pk)"))
		if err != nil {
			t.Fatalf("Emit %d: %v", i, err)
		}
		if env.Seq != uint64(i+1) || env.Tenant != tenant || env.CorrelationID != "req-7" || env.Actor != "tester" {
			t.Errorf("Emit %d = seq %d tenant %q correlation %q actor %q; want seq %d, %q, req-7, tester", i, env.Seq, env.Tenant, env.CorrelationID, env.Actor, i+1, tenant)
		}
		if f.getItem(t, f.names.AppTable(), appKey(pk)) == nil {
			t.Errorf("app row %s missing after Emit %d", pk, i)
		}
	}
	got := f.events(t, tenant)
	if len(got) != 2 || got[0].PrevHash != engine.Genesis || got[1].PrevHash != got[0].Hash {
		t.Fatalf("log = %+v; want 2 chained events from genesis", got)
	}
	if rep := f.verify(t, tenant); !rep.Intact || rep.Events != 2 || rep.HeadSeq != 2 {
		t.Errorf("VerifyChain = %+v; want intact, 2 events, head 2", rep)
	}
}

func TestEmitIdempotencyKey(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)
	ctx := ctxFor(t, tenant)
	ev := engine.Event{Type: "bowl.meal_finished", Payload: `{"grams_eaten":12}`, IdempotencyKey: "bowl-1:ev-1", Fingerprint: "digest-1"}
	first, err := f.engine.EmitEvent(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	// Sequentially and concurrently: every repeat is a duplicate of the first.
	var wg sync.WaitGroup
	errs := make([]error, 5)
	ids := make([]string, 5)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, err := f.engine.EmitEvent(ctx, ev)
			ids[i], errs[i] = env.ID, err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		var dup *engine.DuplicateError
		if !errors.As(err, &dup) || dup.EventID != first.ID || ids[i] != first.ID {
			t.Errorf("repeat %d = id %s, %v; want a duplicate of %s", i, ids[i], err, first.ID)
		} else if dup.Fingerprint != "digest-1" {
			t.Errorf("repeat %d: fingerprint %q; want the first emit's %q", i, dup.Fingerprint, "digest-1")
		}
	}
	// A repeat with another fingerprint learns the first one.
	other := ev
	other.Fingerprint = "digest-2"
	var dup *engine.DuplicateError
	if _, err := f.engine.EmitEvent(ctx, other); !errors.As(err, &dup) || dup.Fingerprint != "digest-1" {
		t.Errorf("repeat with another fingerprint = %v; want a duplicate with fingerprint %q", err, "digest-1")
	}
	if got := f.events(t, tenant); len(got) != 1 {
		t.Errorf("log has %d events after repeats; want 1", len(got))
	}
	// The key is per tenant.
	if _, err := f.engine.EmitEvent(ctxFor(t, newTenant(t)), ev); err != nil {
		t.Errorf("same key, other tenant: %v; want it emitted", err)
	}
}

// The race the dedup row closes: two engines (two processes) both pass the
// pre-check; the transaction's conditional dedup put lets one through.
func TestEmitIdempotencyKeyAcrossEngines(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	g := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)
	ctx := ctxFor(t, tenant)
	ev := engine.Event{Type: "bowl.refilled", Payload: map[string]any{"grams_added": 100}, IdempotencyKey: "k", Fingerprint: "f"}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := f.engine
			if i%2 == 1 {
				e = g.engine
			}
			_, errs[i] = e.EmitEvent(ctx, ev)
		}()
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, engine.ErrDuplicate):
			t.Errorf("emit %d: %v; want nil or a duplicate", i, err)
		default:
			// Found before the transaction or by its failed condition,
			// the duplicate names the first emit's fingerprint.
			if dup := (*engine.DuplicateError)(nil); errors.As(err, &dup) && dup.Fingerprint != "f" {
				t.Errorf("emit %d: duplicate with fingerprint %q; want %q", i, dup.Fingerprint, "f")
			}
		}
	}
	if got := f.events(t, tenant); ok != 1 || len(got) != 1 {
		t.Errorf("%d emits succeeded, log has %d events; want 1 and 1", ok, len(got))
	}
}

func TestFailingConditionFailsOnlyItsEventInTheGroup(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)
	ctx := ctxFor(t, tenant)
	taken := "ORDER#" + tenant + "#taken"
	if _, err := f.engine.Emit(ctx, "com.payment_completed", map[string]any{"n": 0}, putApp(f.names.AppTable(), taken, "")); err != nil {
		t.Fatal(err)
	}

	// Hold the next transaction so that three emits queue up behind it and
	// are committed as one group.
	gate := make(chan struct{})
	f.client.mu.Lock()
	f.client.gate = gate
	f.client.mu.Unlock()
	type result struct {
		env engine.Envelope
		err error
	}
	results := make([]result, 4)
	var wg sync.WaitGroup
	emit := func(i int, w engine.Write) {
		defer wg.Done()
		env, err := f.engine.Emit(ctx, "com.payment_completed", map[string]any{"n": i}, w)
		results[i] = result{env, err}
	}
	wg.Add(1)
	go emit(0, putApp(f.names.AppTable(), "ORDER#"+tenant+"#a", "attribute_not_exists(pk)"))
	testkit.WaitFor(t, "emit 0 to be held at the gate", 30*time.Second, func() bool { return f.engine.QueueLen(tenant) == 0 && f.client.txCalls.Load() == 2 })
	wg.Add(3)
	go emit(1, putApp(f.names.AppTable(), "ORDER#"+tenant+"#b", "attribute_not_exists(pk)"))
	go emit(2, putApp(f.names.AppTable(), taken, "attribute_not_exists(pk)")) // fails
	go emit(3, putApp(f.names.AppTable(), "ORDER#"+tenant+"#c", "attribute_not_exists(pk)"))
	testkit.WaitFor(t, "3 emits queued", 30*time.Second, func() bool { return f.engine.QueueLen(tenant) == 3 })
	close(gate)
	wg.Wait()

	var cf *engine.ConditionFailedError
	if err := results[2].err; !errors.As(err, &cf) || cf.Write != 0 || cf.Table != f.names.AppTable() {
		t.Fatalf("emit with failing condition = %v; want *ConditionFailedError on write 0 of %s", err, f.names.AppTable())
	}
	seqs := map[uint64]bool{}
	for _, i := range []int{0, 1, 3} {
		if results[i].err != nil {
			t.Fatalf("emit %d = %v; want committed", i, results[i].err)
		}
		seqs[results[i].env.Seq] = true
	}
	if !seqs[2] || !seqs[3] || !seqs[4] {
		t.Errorf("committed seqs = %v; want 2, 3, 4 (no gap)", seqs)
	}
	f.client.mu.Lock()
	sizes := append([]int(nil), f.client.sizes...)
	f.client.mu.Unlock()
	if len(sizes) < 3 || sizes[2] != 3 {
		t.Errorf("events per transaction = %v; want the third call to hold the group of 3", sizes)
	}
	if rep := f.verify(t, tenant); !rep.Intact || rep.Events != 4 {
		t.Errorf("VerifyChain = %+v; want intact with 4 events", rep)
	}
	if item := f.getItem(t, f.names.AppTable(), appKey("ORDER#"+tenant+"#b")); item == nil {
		t.Errorf("write of emit 1 missing; want it committed with its event")
	}
}

func TestEmitBadInputWritesNothing(t *testing.T) {
	f := newFixture(t, testCatalog(), func(c *engine.Config) { c.MaxPayloadBytes = 1000 })
	tenant := newTenant(t)
	tooMany := make([]engine.Write, engine.MaxWritesPerEvent+2)
	for i := range tooMany {
		tooMany[i] = putApp(f.names.AppTable(), "x", "")
	}
	tests := []struct {
		name    string
		ctx     context.Context
		typ     string
		payload any
		writes  []engine.Write
		want    error
		msg     string
	}{
		{"no tenant", context.Background(), "bowl.empty", map[string]any{}, nil, engine.ErrNoTenant, "no tenant"},
		{"bad tenant", engine.WithTenant(context.Background(), "a#b"), "bowl.empty", map[string]any{}, nil, engine.ErrInvalidTenant, `"a#b"`},
		{"malformed type", nil, "Bowl Empty", map[string]any{}, nil, engine.ErrInvalidType, `"Bowl Empty"`},
		{"undeclared type", nil, "bowl.exploded", map[string]any{}, nil, engine.ErrUnknownType, `"bowl.exploded"`},
		{"array payload", nil, "bowl.refilled", `[1,2]`, nil, engine.ErrInvalidPayload, "[1,2]"},
		{"string payload", nil, "bowl.refilled", "hello", nil, engine.ErrInvalidPayload, "hello"},
		{"null payload", nil, "bowl.refilled", json.RawMessage("null"), nil, engine.ErrInvalidPayload, "null"},
		{"empty key", nil, "bowl.refilled", `{"a":{"":1}}`, nil, engine.ErrInvalidPayload, "cannot be stored"},
		{"number out of range", nil, "bowl.refilled", `{"a":[1e126]}`, nil, engine.ErrInvalidPayload, "1e+126"},
		{"nil payload", nil, "bowl.refilled", nil, nil, engine.ErrInvalidPayload, "nil"},
		{"payload too large", nil, "bowl.refilled", map[string]any{"x": strings.Repeat("a", 2000)}, nil, engine.ErrPayloadTooLarge, "2008 bytes"},
		{"too many writes", nil, "bowl.refilled", map[string]any{}, tooMany, engine.ErrTooManyWrites, "99 writes; at most 98"},
		{"events table write", nil, "bowl.refilled", map[string]any{}, []engine.Write{putApp(f.names.EventsTable(), "x", "")}, engine.ErrEventsTableWrite, f.names.EventsTable()},
		{"empty write", nil, "bowl.refilled", map[string]any{}, []engine.Write{{}}, engine.ErrInvalidWrite, "write 0"},
		{"write without table", nil, "bowl.refilled", map[string]any{}, []engine.Write{{Delete: &types.Delete{Key: appKey("x")}}}, engine.ErrInvalidWrite, "no table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = ctxFor(t, tenant)
			}
			_, err := f.engine.Emit(ctx, tt.typ, tt.payload, tt.writes...)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Emit = %v; want %v mentioning %q", err, tt.want, tt.msg)
			}
		})
	}
	if got := f.events(t, tenant); len(got) != 0 || f.client.txCalls.Load() != 0 {
		t.Errorf("after bad input: %d events, %d transactions; want 0 and 0", len(got), f.client.txCalls.Load())
	}
	if item := f.getItem(t, f.names.EventsTable(), map[string]types.AttributeValue{"pk": sv(engine.HeadPK(tenant)), "sk": sv(engine.HeadSK)}); item != nil {
		t.Errorf("head row written after bad input: %v", item)
	}
}

func TestInlineHandlerErrorFailsEmitBeforeWrite(t *testing.T) {
	cat := testCatalog()
	var localRan sync.WaitGroup
	localRan.Add(1)
	var localSeq uint64
	cat.Subscriptions = append(cat.Subscriptions,
		engine.Subscription{Name: "guard", Pattern: "bowl.*", Lane: engine.Inline, Handler: func(ctx context.Context, env engine.Envelope) error {
			if env.Payload["grams_added"] == -1.0 {
				return errors.New("negative refill")
			}
			return nil
		}},
		engine.Subscription{Name: "after", Pattern: "bowl.refilled", Lane: engine.Local, Handler: func(ctx context.Context, env engine.Envelope) error {
			localSeq = env.Seq
			localRan.Done()
			return errors.New("local errors are only logged")
		}},
	)
	f := newFixture(t, cat, nil)
	tenant := newTenant(t)
	ctx := ctxFor(t, tenant)
	_, err := f.engine.Emit(ctx, "bowl.refilled", map[string]any{"grams_added": -1}, putApp(f.names.AppTable(), "INLINE#"+tenant, ""))
	if !errors.Is(err, engine.ErrInlineHandler) || !strings.Contains(err.Error(), "negative refill") {
		t.Fatalf("Emit with failing INLINE handler = %v; want ErrInlineHandler with the handler's error", err)
	}
	if f.client.txCalls.Load() != 0 || f.getItem(t, f.names.AppTable(), appKey("INLINE#"+tenant)) != nil {
		t.Errorf("a transaction ran after an INLINE failure; want nothing written")
	}
	env, err := f.engine.Emit(ctx, "bowl.refilled", map[string]any{"grams_added": 5})
	if err != nil {
		t.Fatalf("Emit after the LOCAL handler's error: %v; want nil", err)
	}
	localRan.Wait()
	_ = f.engine.Close()
	if localSeq != env.Seq {
		t.Errorf("LOCAL handler saw seq %d; want %d (after commit)", localSeq, env.Seq)
	}
}

func TestEmitWithCanceledContextWritesNothing(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)
	ctx, cancel := context.WithCancel(ctxFor(t, tenant))
	cancel()
	_, err := f.engine.Emit(ctx, "bowl.empty", map[string]any{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Emit(canceled ctx) = %v; want context.Canceled", err)
	}
	if got := f.events(t, tenant); len(got) != 0 {
		t.Errorf("log has %d events; want 0", len(got))
	}
}

// TestWritesToOneItemNeverShareAGroup: two emits that both create one
// item, queued together, go in separate transactions; the first commits,
// and the second's ConditionFailedError is returned only once the first's
// item can be read (the API's Idempotency-Key replay relies on this).
func TestWritesToOneItemNeverShareAGroup(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)
	ctx := ctxFor(t, tenant)
	gate := make(chan struct{})
	f.client.mu.Lock()
	f.client.gate = gate
	f.client.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	emit := func(i int, pk string) {
		defer wg.Done()
		_, errs[i] = f.engine.Emit(ctx, "com.payment_completed", map[string]any{"n": i}, putApp(f.names.AppTable(), pk, "attribute_not_exists(pk)"))
	}
	wg.Add(1)
	go emit(0, "ORDER#"+tenant+"#first") // held at the gate
	testkit.WaitFor(t, "emit 0 to be held at the gate", 30*time.Second, func() bool { return f.engine.QueueLen(tenant) == 0 && f.client.txCalls.Load() == 1 })
	same := "ORDER#" + tenant + "#same"
	wg.Add(2)
	go emit(1, same)
	testkit.WaitFor(t, "emit 1 queued", 30*time.Second, func() bool { return f.engine.QueueLen(tenant) == 1 })
	go emit(2, same)
	testkit.WaitFor(t, "emits 1 and 2 queued", 30*time.Second, func() bool { return f.engine.QueueLen(tenant) == 2 })
	close(gate)
	wg.Wait()

	var cf *engine.ConditionFailedError
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("emits 0 and 1 = %v, %v; want both committed", errs[0], errs[1])
	}
	if !errors.As(errs[2], &cf) {
		t.Fatalf("second emit creating %s = %v; want *ConditionFailedError", same, errs[2])
	}
	f.client.mu.Lock()
	sizes := append([]int(nil), f.client.sizes...)
	f.client.mu.Unlock()
	for i, n := range sizes {
		if n > 1 && i > 0 {
			t.Errorf("events per transaction = %v; want the two writes to %s in separate transactions", sizes, same)
		}
	}
	if rep := f.verify(t, tenant); !rep.Intact || rep.Events != 2 {
		t.Errorf("VerifyChain = %+v; want intact with 2 events", rep)
	}
}
