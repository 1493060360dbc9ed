package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
)

// queryLog records the Queries a Log makes and can fail them.
type queryLog struct {
	engine.LogDB
	mu      sync.Mutex
	queries []*dynamodb.QueryInput
	fail    error
}

func (q *queryLog) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	q.mu.Lock()
	c := *in
	q.queries = append(q.queries, &c)
	fail := q.fail
	q.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	return q.LogDB.Query(ctx, in, opts...)
}

// limits returns the Limit of each query so far and forgets them.
func (q *queryLog) limits(t *testing.T, consistent bool) []int32 {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []int32
	for _, in := range q.queries {
		if aws.ToBool(in.ConsistentRead) != consistent {
			t.Errorf("Query ConsistentRead = %v; want %v", aws.ToBool(in.ConsistentRead), consistent)
		}
		out = append(out, aws.ToInt32(in.Limit))
	}
	q.queries = nil
	return out
}

func seqs(t *testing.T, events func(func(engine.Envelope, error) bool)) []uint64 {
	t.Helper()
	var out []uint64
	for env, err := range events {
		if err != nil {
			t.Fatalf("Log.After yielded %v", err)
		}
		out = append(out, env.Seq)
	}
	return out
}

// Log.After pages through a tenant's log in seq order, strongly
// consistent unless asked otherwise, asks no Query for more rows than its
// limit leaves and stops reading when the caller stops.
func TestLogAfterPagesAndLimits(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)
	ctx := ctxFor(t, tenant)
	for i := 1; i <= 7; i++ {
		if _, err := f.engine.Emit(ctx, "bowl.meal_finished", map[string]any{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	q := &queryLog{LogDB: f.client}
	log := engine.NewLog(q, f.names.EventsTable())

	var got []engine.Envelope
	for env, err := range log.After(ctx, tenant, 0, engine.ReadOptions{PageSize: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, env)
	}
	want := f.events(t, tenant)
	if len(got) != 7 || len(want) != 7 {
		t.Fatalf("After(0) yielded %d events; the table holds %d; want 7", len(got), len(want))
	}
	for i := range got {
		if got[i].ID != want[i].ID || got[i].Seq != uint64(i+1) || got[i].Hash != want[i].Hash {
			t.Errorf("After(0) event %d = %s seq %d; want %s seq %d", i, got[i].ID, got[i].Seq, want[i].ID, i+1)
		}
	}
	if l := q.limits(t, true); !slices.Equal(l, []int32{2, 2, 2, 2}) {
		t.Errorf("After(0, page 2) queried with limits %v; want [2 2 2 2]", l)
	}

	if s := seqs(t, log.After(ctx, tenant, 3, engine.ReadOptions{Limit: 3, PageSize: 2, Eventual: true})); !slices.Equal(s, []uint64{4, 5, 6}) {
		t.Errorf("After(3, limit 3) = seqs %v; want [4 5 6]", s)
	}
	if l := q.limits(t, false); !slices.Equal(l, []int32{2, 1}) {
		t.Errorf("After(3, limit 3, page 2) queried with limits %v; want [2 1]", l)
	}

	for range log.After(ctx, tenant, 0, engine.ReadOptions{PageSize: 2}) {
		break
	}
	if l := q.limits(t, true); len(l) != 1 {
		t.Errorf("a loop that stops at the first event made %d queries; want 1", len(l))
	}
	if s := seqs(t, log.After(ctx, tenant, 7, engine.ReadOptions{})); len(s) != 0 {
		t.Errorf("After(7) of a log ending at 7 = %v; want none", s)
	}
	if l := q.limits(t, true); !slices.Equal(l, []int32{0}) {
		t.Errorf("After(7) without a page size queried with limits %v; want one Query without a limit", l)
	}

	env, found, err := log.Event(ctx, tenant, 5)
	if err != nil || !found || env.ID != want[4].ID {
		t.Errorf("Event(5) = %s, %v, %v; want %s", env.ID, found, err, want[4].ID)
	}
	if _, found, err := log.Event(ctx, tenant, 8); err != nil || found {
		t.Errorf("Event(8) found %v, %v; want not found", found, err)
	}
	head, err := log.Head(ctx, tenant)
	if err != nil || head != (engine.Head{Found: true, Seq: 7, Hash: want[6].Hash}) {
		t.Errorf("Head = %+v, %v; want seq 7, hash of seq 7", head, err)
	}
	if head, err := log.Head(ctx, newTenant(t)); err != nil || head != (engine.Head{Hash: engine.Genesis}) {
		t.Errorf("Head of a tenant without events = %+v, %v; want not found at Genesis", head, err)
	}

	q.fail = errors.New("throttled")
	var errs []error
	for _, err := range log.After(ctx, tenant, 2, engine.ReadOptions{}) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], q.fail) || !strings.Contains(errs[0].Error(), tenant) {
		t.Errorf("After with a failing Query yielded %v; want one error naming tenant %s", errs, tenant)
	}
}

// A row that is not a well-formed event comes as a *RowError in its place
// (with the envelope as decoded when only its key is wrong) and the pass
// goes on.
func TestLogAfterYieldsBadRows(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)
	ctx := ctxFor(t, tenant)
	for i := 1; i <= 2; i++ {
		if _, err := f.engine.Emit(ctx, "bowl.meal_finished", map[string]any{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := f.client.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.names.EventsTable()), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	// Seq 3's row holds seq 2's event (a copy under another key); seq 4's
	// row lost its payload.
	moved := f.getItem(t, f.names.EventsTable(), map[string]types.AttributeValue{"pk": sv(engine.EventPK(tenant)), "sk": sv(engine.SeqSK(2))})
	moved["sk"] = sv(engine.SeqSK(3))
	put(moved)
	broken := f.getItem(t, f.names.EventsTable(), map[string]types.AttributeValue{"pk": sv(engine.EventPK(tenant)), "sk": sv(engine.SeqSK(1))})
	broken["sk"], broken["seq"] = sv(engine.SeqSK(4)), &types.AttributeValueMemberN{Value: "4"}
	delete(broken, "payload")
	put(broken)

	var got []string
	for env, err := range engine.NewLog(f.client, f.names.EventsTable()).After(ctx, tenant, 0, engine.ReadOptions{PageSize: 3}) {
		var row *engine.RowError
		switch {
		case err == nil:
			got = append(got, fmt.Sprintf("seq %d", env.Seq))
		case errors.As(err, &row) && errors.Is(err, engine.ErrBadRow):
			got = append(got, fmt.Sprintf("bad %d mismatch %v seq %d", row.Key, row.KeyMismatch(), env.Seq))
		default:
			t.Fatalf("After yielded %v; want event rows or *RowError", err)
		}
	}
	want := []string{"seq 1", "seq 2", "bad 3 mismatch true seq 2", "bad 4 mismatch false seq 0"}
	if !slices.Equal(got, want) {
		t.Errorf("After(0) over bad rows = %q; want %q", got, want)
	}
	if _, found, err := engine.NewLog(f.client, f.names.EventsTable()).Event(ctx, tenant, 4); !found || !errors.Is(err, engine.ErrBadRow) {
		t.Errorf("Event(4) of a row without payload = found %v, %v; want found and ErrBadRow", found, err)
	}
}
