package deadletter

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB) }

func TestRecordOverwritesAndReads(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := New(dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions), lstest.Names(t).DeadLettersTable(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tenant := "t-" + ulid.Make().String()
	ev := ulid.Make().String()
	for i := 1; i <= 3; i++ {
		err := s.Record(ctx, Letter{Tenant: tenant, EventID: ev, EventType: "com.payment_completed", Subscription: "book_shipment", Error: "boom", ReceiveCount: i})
		if err != nil {
			t.Fatalf("Record #%d: %v", i, err)
		}
	}
	if err := s.Record(ctx, Letter{Tenant: tenant, EventID: ev, Subscription: "notify_buyer", Error: "x"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ForEvent(ctx, tenant, ev)
	if err != nil || len(got) != 2 {
		t.Fatalf("ForEvent = %d letters, %v; want 2", len(got), err)
	}
	if got[0].Subscription != "book_shipment" || got[0].ReceiveCount != 3 || !got[0].Open() {
		t.Errorf("letter = %+v; want book_shipment, receive count 3, open", got[0])
	}
	if err := s.MarkRedriven(ctx, tenant, ev, "book_shipment"); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Tenant(ctx, tenant)
	if len(got) != 2 || got[0].Open() || !got[1].Open() {
		t.Errorf("after MarkRedriven: %+v; want first closed, second open", got)
	}
	if err := s.MarkRedriven(ctx, tenant, "absent", "x"); err == nil {
		t.Error("MarkRedriven of an absent letter = nil; want an error")
	}
	if err := s.Record(ctx, Letter{EventID: ev}); !errors.Is(err, ErrIncomplete) {
		t.Errorf("Record without tenant = %v; want ErrIncomplete", err)
	}
}

// TestPoisonPillsSpreadOverPartitions: a flood of poison pills lands on
// PoisonPartitions partitions, not one (issue 22: every pill was under the
// single key POISON), and Poison still finds every one, oldest first, and
// a replay can mark it.
func TestPoisonPillsSpreadOverPartitions(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	db := dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions)
	table := lstest.Names(t).DeadLettersTable()
	s, err := New(db, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	pks := map[string]bool{}
	for range 40 {
		id := ulid.Make().String()
		ids[id] = true
		pks[poisonPK(id)] = true
		if err := s.RecordPoison(ctx, Letter{MessageID: id, Body: "not json", Error: "decode"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(pks) < 8 {
		t.Errorf("40 poison pills in %d partitions; want them spread over at least 8 of %d", len(pks), PoisonPartitions)
	}
	for pk := range pks {
		if !strings.HasPrefix(pk, PoisonPKPrefix) || !isPoisonPK(pk) {
			t.Errorf("poison partition %q; want %s<nn>", pk, PoisonPKPrefix)
		}
	}
	all, err := s.Poison(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i, l := range all {
		if i > 0 && l.At.Before(all[i-1].At) {
			t.Errorf("Poison()[%d] at %v before [%d] at %v; want oldest first", i, l.At, i-1, all[i-1].At)
		}
		if !ids[l.MessageID] {
			continue
		}
		found++
		if !l.Poison || l.Body != "not json" || l.Tenant != "" {
			t.Errorf("poison letter = %+v; want poison with body and no tenant", l)
		}
	}
	if found != len(ids) {
		t.Fatalf("Poison found %d of the %d pills recorded", found, len(ids))
	}
	if err := s.MarkReplayed(ctx, all[len(all)-1]); err != nil {
		t.Errorf("MarkReplayed(%s): %v", all[len(all)-1].Key(), err)
	}
}

func TestUnmatchedCounters(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := New(dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions), lstest.Names(t).DeadLettersTable(), nil)
	if err != nil {
		t.Fatal(err)
	}
	typ := "x.t" + ulid.Make().String()[20:]
	typ = strings.ToLower(typ)
	for range 3 {
		if err := s.CountUnmatched(ctx, typ); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Unmatched(ctx)
	if err != nil || got[typ] != 3 {
		t.Errorf("Unmatched()[%q] = %d, %v; want 3", typ, got[typ], err)
	}
	all, err := s.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		if l.Tenant == "" && !l.Poison {
			t.Errorf("All() returned a counter row as a letter: %+v", l)
		}
	}
}
