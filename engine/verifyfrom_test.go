package engine_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
)

// VerifyFrom goes on from a verified position: a limit makes it Partial
// and says where it stopped, the next call from there reaches the head,
// and a later row changed after the position is found while the rows
// before it are not read again (the checkpoint row itself is compared).
func TestVerifyFromContinuesFromACheckpoint(t *testing.T) {
	f := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)
	ctx := ctxFor(t, tenant)
	for i := 1; i <= 9; i++ {
		if _, err := f.engine.Emit(ctx, "bowl.meal_finished", map[string]any{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	v := engine.NewVerifier(f.client, f.names.EventsTable(), 2)
	bg := context.Background()

	first, err := v.VerifyFrom(bg, tenant, engine.GenesisPoint, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Intact || !first.Partial || first.Events != 4 || first.Verified.Seq != 4 {
		t.Fatalf("VerifyFrom(genesis, limit 4) = %+v; want intact, partial, 4 events, verified through seq 4", first)
	}
	rest, err := v.VerifyFrom(bg, tenant, first.Verified, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !rest.Intact || rest.Partial || rest.Events != 5 || rest.Verified.Seq != 9 || rest.HeadSeq != 9 {
		t.Fatalf("VerifyFrom(seq 4) = %+v; want intact, complete, 5 events, verified through 9", rest)
	}
	full := f.verify(t, tenant)
	if rest.Verified != full.Verified {
		t.Errorf("incremental end %+v; full verification ends at %+v", rest.Verified, full.Verified)
	}

	setPayload := func(seq uint64) {
		t.Helper()
		_, err := f.client.Client.UpdateItem(bg, &dynamodb.UpdateItemInput{
			TableName:        aws.String(f.names.EventsTable()),
			Key:              map[string]types.AttributeValue{"pk": sv(engine.EventPK(tenant)), "sk": sv(engine.SeqSK(seq))},
			UpdateExpression: aws.String("SET payload = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberM{
				Value: map[string]types.AttributeValue{"i": &types.AttributeValueMemberN{Value: "999"}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A row after the checkpoint.
	setPayload(7)
	got, err := v.VerifyFrom(bg, tenant, first.Verified, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Intact || got.FirstBadSeq != 7 || got.Reason != engine.ReasonHashMismatch || got.Verified.Seq != 6 {
		t.Errorf("after changing seq 7, VerifyFrom(seq 4) = %+v; want broken at 7 (hash mismatch), verified through 6", got)
	}
	// The checkpoint row itself.
	setPayload(4)
	got, err = v.VerifyFrom(bg, tenant, first.Verified, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Intact || got.FirstBadSeq != 4 || got.Reason != engine.ReasonHashMismatch {
		t.Errorf("after changing seq 4, VerifyFrom(seq 4) = %+v; want broken at 4", got)
	}
	// A stale checkpoint (a hash the row never had).
	got, err = v.VerifyFrom(bg, tenant, engine.ChainPoint{Seq: 2, Hash: engine.Genesis}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Intact || got.FirstBadSeq != 2 {
		t.Errorf("VerifyFrom(seq 2 with a wrong hash) = %+v; want broken at 2", got)
	}
}

func TestTenantOfPK(t *testing.T) {
	for pk, want := range map[string]string{
		engine.EventPK("t1"):     "t1",
		engine.HeadPK("acme-co"): "acme-co",
		"TENANT#t1":              "",
		"TENANT#a#b#EVENT":       "",
		"EMIT#t1#k":              "",
		"TENANT##EVENT":          "",
	} {
		if got := engine.TenantOfPK(pk); got != want {
			t.Errorf("TenantOfPK(%q) = %q; want %q", pk, got, want)
		}
	}
}
