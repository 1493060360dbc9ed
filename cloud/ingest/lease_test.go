package ingest

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Slot leases against DynamoDB Local: each slot has one owner, a process
// waits while all are held, a release hands the slot over at once, and a
// holder whose slot was taken learns it has lost the lease.
func TestSlotLease(t *testing.T) {
	db := dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions)
	table := lstest.Names(t).AppTable()
	group := "lease-test-" + time.Now().Format("150405.000000")
	log := testkit.Logger(t, slog.LevelWarn)
	newLease := func(owner string) *slotLease {
		return &slotLease{db: db, table: table, group: group, owner: owner, slots: 2, ttl: 2 * time.Second, now: time.Now, log: log}
	}
	ctx := context.Background()
	a, b, c := newLease("a"), newLease("b"), newLease("c")
	for _, l := range []*slotLease{a, b} {
		if err := l.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if a.slot == b.slot || !a.held() || !b.held() {
		t.Fatalf("a has slot %d (held %v), b slot %d (held %v); want distinct held slots", a.slot, a.held(), b.slot, b.held())
	}

	// Both slots are live: c waits until a releases.
	got := make(chan error, 1)
	go func() { got <- c.acquire(ctx) }()
	select {
	case err := <-got:
		t.Fatalf("c.acquire() = %v while both slots are held; want it to wait", err)
	case <-time.After(300 * time.Millisecond): // a bound for a negative check, not a correctness wait
	}
	if err := a.release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil || c.slot != a.slot {
			t.Fatalf("c.acquire() = %v, slot %d; want a's slot %d", err, c.slot, a.slot)
		}
	case <-time.After(hangGuardLease):
		t.Fatal("c never took the released slot")
	}

	// Someone takes b's slot (as after b stalled past its TTL): b's next
	// renewal reports the loss.
	d := newLease("d")
	if err := d.put(ctx, b.slot, time.Now(), "#owner <> :owner"); err != nil {
		t.Fatal(err)
	}
	lost := make(chan error, 1)
	go func() { lost <- b.keep(ctx) }()
	select {
	case err := <-lost:
		if !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("b.keep() = %v; want ErrLeaseLost", err)
		}
	case <-time.After(hangGuardLease):
		t.Fatal("b never noticed its slot was taken")
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: leaseKey(group, b.slot), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if o := out.Item["owner"].(*types.AttributeValueMemberS).Value; o != "d" {
		t.Errorf("owner of slot %d = %q; want d (b's renewal must not overwrite it)", b.slot, o)
	}
}

const hangGuardLease = 30 * time.Second
