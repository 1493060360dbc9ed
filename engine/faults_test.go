package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// lossyClient commits the first transaction for real and then reports a
// network error, as if the response had been lost.
type lossyClient struct {
	*countingClient
	lost atomic.Bool
}

var errLost = errors.New("read tcp: connection reset by peer")

func (c *lossyClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := c.countingClient.TransactWriteItems(ctx, in, opts...)
	if err == nil && c.lost.CompareAndSwap(false, true) {
		return nil, errLost
	}
	return out, err
}

// A committed transaction whose answer is lost must not commit twice, nor
// be reported as failed.
func TestLostResponseCommitsOnce(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	lossy := &lossyClient{countingClient: f.client}
	e, err := engine.New(engine.Config{
		Client: lossy, EventsTable: f.names.EventsTable(), InboxTable: f.names.InboxTable(), Catalog: testCatalog(),
	})
	if err != nil {
		t.Fatal(err)
	}
	tenant := newTenant(t)
	env, err := e.Emit(ctxFor(t, tenant), "bowl.refilled", map[string]any{"grams_added": 50})
	if err != nil {
		t.Fatalf("Emit with a lost response = %v; want the committed event", err)
	}
	if !lossy.lost.Load() {
		t.Fatal("the response was never lost; the test did not test anything")
	}
	log := f.events(t, tenant)
	if len(log) != 1 || log[0].ID != env.ID || env.Seq != 1 {
		t.Errorf("log = %d events (first %+v); want exactly the emitted event %s at seq 1", len(log), log, env.ID)
	}
	if _, err := e.Emit(ctxFor(t, tenant), "bowl.refilled", map[string]any{"grams_added": 51}); err != nil {
		t.Fatal(err)
	}
	if rep := f.verify(t, tenant); !rep.Intact || rep.Events != 2 {
		t.Errorf("VerifyChain = %+v; want intact with 2 events", rep)
	}
}

// DynamoDB rejects a whole transaction for one malformed write without
// saying which: the group is split so that only the offender fails.
func TestMalformedWriteFailsOnlyItsEvent(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)
	ctx := ctxFor(t, tenant)
	if _, err := f.engine.Emit(ctx, "bowl.empty", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	f.client.mu.Lock()
	f.client.gate = gate
	f.client.mu.Unlock()
	bad := engine.Write{Update: &types.Update{
		TableName:                 aws.String(f.names.AppTable()),
		Key:                       appKey("BAD#" + tenant),
		UpdateExpression:          aws.String("SET #missing = :v"), // names an undefined placeholder
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": sv("x")},
	}}
	errs := make([]error, 4)
	var wg sync.WaitGroup
	emit := func(i int, writes ...engine.Write) {
		defer wg.Done()
		_, errs[i] = f.engine.Emit(ctx, "bowl.empty", map[string]any{"i": i}, writes...)
	}
	wg.Add(1)
	go emit(0)
	testkit.WaitFor(t, "emit 0 to be held at the gate", 30*time.Second, func() bool { return f.engine.QueueLen(tenant) == 0 && f.client.txCalls.Load() == 2 })
	wg.Add(3)
	go emit(1)
	go emit(2, bad)
	go emit(3)
	testkit.WaitFor(t, "3 emits queued", 30*time.Second, func() bool { return f.engine.QueueLen(tenant) == 3 })
	close(gate)
	wg.Wait()
	if !errors.Is(errs[2], engine.ErrRejected) {
		t.Errorf("emit with a malformed write = %v; want ErrRejected", errs[2])
	}
	for _, i := range []int{0, 1, 3} {
		if errs[i] != nil {
			t.Errorf("emit %d = %v; want committed", i, errs[i])
		}
	}
	if rep := f.verify(t, tenant); !rep.Intact || rep.Events != 4 {
		t.Errorf("VerifyChain = %+v; want intact with 4 events", rep)
	}
}
