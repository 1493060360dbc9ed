package engine_test

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/faultproxy"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// AccessDenied and ResourceNotFound are about the caller's role or tables,
// never about the event: Emit answers ErrUnavailable, not ErrRejected, so
// callers hold their input instead of dead-lettering it, and the same
// event commits once the cause is fixed. DynamoDB answers both as HTTP 400
// with "OK to retry? No" (developer guide, "Error handling"); the fault
// proxy answers exactly that, which DynamoDB Local cannot be made to.
func TestInfrastructureErrorsAreNotRejections(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault faultproxy.Fault
		ops   []string
		key   string
	}{
		{"access denied on the transaction", faultproxy.AccessDenied, []string{"TransactWriteItems"}, "k1"},
		{"table not found on the transaction", faultproxy.TableNotFound, []string{"TransactWriteItems"}, ""},
		{"table not found on the dedup read", faultproxy.TableNotFound, []string{"GetItem", "TransactWriteItems"}, "k1"},
		{"table not found on the head read", faultproxy.TableNotFound, []string{"GetItem", "TransactWriteItems"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			stack := lstest.Stack(t)
			proxy := faultproxy.Start(t, stack.DynamoDBEndpoint)
			client := dynamodb.NewFromConfig(lstest.AWSConfig(t), quietLocal, func(o *dynamodb.Options) {
				o.BaseEndpoint = aws.String(proxy.URL())
				o.RetryMaxAttempts = 1
			})
			names := lstest.Names(t)
			e, err := engine.New(engine.Config{Client: client, EventsTable: names.EventsTable(), InboxTable: names.InboxTable(),
				Catalog: testCatalog(), Logger: testkit.Logger(t, slog.LevelWarn)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			tenant := newTenant(t)
			proxy.Fail(faultproxy.Ops(c.ops...), c.fault)
			ev := engine.Event{Type: "bowl.refilled", Payload: map[string]any{"grams_added": 50}, IdempotencyKey: c.key}
			_, err = e.EmitEvent(ctxFor(t, tenant), ev)
			if !errors.Is(err, engine.ErrUnavailable) || errors.Is(err, engine.ErrRejected) {
				t.Fatalf("EmitEvent during %s = %v; want ErrUnavailable and not ErrRejected", c.fault.Type, err)
			}
			if got := engine.FailureReason(err); got != "unavailable" {
				t.Errorf("FailureReason(%v) = %q; want unavailable", err, got)
			}
			proxy.Heal()
			env, err := e.EmitEvent(ctxFor(t, tenant), ev)
			if err != nil || env.Seq != 1 {
				t.Fatalf("EmitEvent after the cause is fixed = seq %d, %v; want seq 1", env.Seq, err)
			}
		})
	}
}
