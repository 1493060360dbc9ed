package engine_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
)

// TestVerifyChainFindsTampering changes the log behind the engine's back
// with direct DynamoDB calls and checks that VerifyChain names the first bad
// sequence and why.
func TestVerifyChainFindsTampering(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	evKey := func(tenant string, seq uint64) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": sv(engine.EventPK(tenant)), "sk": sv(engine.SeqSK(seq))}
	}
	setPayload := func(t *testing.T, tenant string, seq uint64, payload types.AttributeValue) {
		t.Helper()
		_, err := f.client.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
			TableName:                 aws.String(f.names.EventsTable()),
			Key:                       evKey(tenant, seq),
			UpdateExpression:          aws.String("SET payload = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": payload},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	del := func(t *testing.T, key map[string]types.AttributeValue) {
		t.Helper()
		if _, err := f.client.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(f.names.EventsTable()), Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name       string
		tamper     func(t *testing.T, tenant string)
		wantSeq    uint64
		wantReason engine.Reason
	}{
		{"untouched", func(*testing.T, string) {}, 0, ""},
		{"one payload changed", func(t *testing.T, tenant string) {
			setPayload(t, tenant, 4, &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"i": &types.AttributeValueMemberN{Value: "400"}}})
		}, 4, engine.ReasonHashMismatch},
		{"one row deleted", func(t *testing.T, tenant string) { del(t, evKey(tenant, 6)) }, 6, engine.ReasonGap},
		{"two payloads swapped", func(t *testing.T, tenant string) {
			a := f.getItem(t, f.names.EventsTable(), evKey(tenant, 3))["payload"]
			b := f.getItem(t, f.names.EventsTable(), evKey(tenant, 7))["payload"]
			setPayload(t, tenant, 3, b)
			setPayload(t, tenant, 7, a)
		}, 3, engine.ReasonHashMismatch},
		{"newest row deleted", func(t *testing.T, tenant string) { del(t, evKey(tenant, 8)) }, 8, engine.ReasonHeadAhead},
		{"head deleted", func(t *testing.T, tenant string) {
			del(t, map[string]types.AttributeValue{"pk": sv(engine.HeadPK(tenant)), "sk": sv(engine.HeadSK)})
		}, 1, engine.ReasonMissingHead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tenant := newTenant(t)
			ctx := ctxFor(t, tenant)
			for i := 1; i <= 8; i++ {
				if _, err := f.engine.Emit(ctx, "bowl.meal_finished", map[string]any{"i": i}); err != nil {
					t.Fatal(err)
				}
			}
			tt.tamper(t, tenant)
			rep := f.verify(t, tenant)
			if rep.Intact != (tt.wantReason == "") || rep.FirstBadSeq != tt.wantSeq || rep.Reason != tt.wantReason {
				t.Errorf("VerifyChain = intact %v, first bad seq %d, reason %q (%s); want seq %d, reason %q",
					rep.Intact, rep.FirstBadSeq, rep.Reason, rep.Detail, tt.wantSeq, tt.wantReason)
			}
		})
	}
}

// Small pages exercise the paging path of VerifyChain.
func TestVerifyChainPages(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)
	ctx := ctxFor(t, tenant)
	for i := 0; i < 7; i++ {
		if _, err := f.engine.Emit(ctx, "bowl.empty", map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := engine.NewVerifier(f.client, f.names.EventsTable(), 2).VerifyChain(context.Background(), tenant)
	if err != nil || !rep.Intact || rep.Events != 7 {
		t.Errorf("VerifyChain with 2-row pages = %+v, %v; want intact with 7 events", rep, err)
	}
	tenants, err := engine.NewVerifier(f.client, f.names.EventsTable(), 0).Tenants(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, x := range tenants {
		found = found || x == tenant
	}
	if !found {
		t.Errorf("Tenants() = %v; want it to include %s", tenants, tenant)
	}
}
