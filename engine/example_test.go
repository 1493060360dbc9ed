package engine_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
)

func ExampleChainHash() {
	env := engine.Envelope{
		ID:            "01JDQ4Z8K9X2M3N4P5Q6R7S8T9",
		Type:          "bowl.refilled",
		Tenant:        "t1",
		CorrelationID: "req-1",
		Actor:         "bowl-42",
		OccurredAt:    time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Payload:       map[string]any{"level_g": 300, "grams_added": 120.0},
		Seq:           1,
	}
	canon, _ := engine.CanonicalEnvelope(env)
	fmt.Println(string(canon))
	h, _ := engine.ChainHash(engine.Genesis, env)
	fmt.Println(h)
	// Output:
	// {"actor":"bowl-42","correlation_id":"req-1","id":"01JDQ4Z8K9X2M3N4P5Q6R7S8T9","occurred_at":"2026-11-29T12:00:00.000000000Z","payload":{"grams_added":120,"level_g":300},"seq":1,"tenant":"t1","type":"bowl.refilled"}
	// 42258b18390220c9cd61f1cf0846445e57913a1ae33f2c78efc0c3435541771c
}

func ExampleSubscription_Matches() {
	exact := engine.Subscription{Name: "late_meals", Pattern: "bowl.meal_finish", Lane: engine.Durable}
	glob := engine.Subscription{Name: "meals", Pattern: "bowl.meal_*", Lane: engine.Durable}
	fmt.Println(exact.Matches("bowl.meal_finished"), glob.Matches("bowl.meal_finished"))
	// Output: false true
}

func ExampleCatalog_Check() {
	c := engine.Catalog{
		Types:     []engine.EventType{{Name: "bowl.meal_finished"}, {Name: "row.contact.modify"}},
		Producers: []engine.Producer{{Name: "ingest", Emits: []string{"bowl.meal_finished"}}, {Name: "app-stream", Emits: []string{"row.contact.modify"}}},
		Subscriptions: []engine.Subscription{
			{Name: "record_intake", Pattern: "bowl.meal_finish", Lane: engine.Durable},
			{Name: "contact_sync", Pattern: "row.contact.*", Lane: engine.Local},
		},
	}
	err := c.Check()
	fmt.Println(errors.Is(err, engine.ErrGlobMatchesNothing), errors.Is(err, engine.ErrWrongLane))
	fmt.Println(err)
	// Output:
	// true true
	// subscription record_intake: pattern matches no declared type: pattern "bowl.meal_finish" matches no declared type (it has no wildcard, so it is an exact name)
	// subscription contact_sync: subscription on a lane that never sees its events: matches row changes [row.contact.modify] on lane LOCAL; only BEST_EFFORT sees row changes
}

func ExampleMatch() {
	subs := []engine.Subscription{
		{Name: "notify_buyer", Pattern: "com.payment_completed", Lane: engine.Durable},
		{Name: "audit", Pattern: "com.*", Lane: engine.Local},
		{Name: "book_shipment", Pattern: "com.payment_completed", Lane: engine.Durable},
	}
	for _, s := range engine.Match(subs, engine.Durable, "com.payment_completed") {
		fmt.Println(s.Name)
	}
	// Output:
	// notify_buyer
	// book_shipment
}

// Emit commits the order row and its event in one transaction; a failing
// condition on the order fails only this emit.
func ExampleEngine_Emit() {
	var client *dynamodb.Client // dynamodb.NewFromConfig(cfg)
	e, err := engine.New(engine.Config{
		Client:      client,
		EventsTable: "dev-bowline-events",
		InboxTable:  "dev-bowline-inbox",
		Catalog:     engine.Catalog{Types: []engine.EventType{{Name: "com.order_created"}}},
	})
	if err != nil {
		panic(err)
	}
	ctx := engine.WithTenant(context.Background(), "t1")
	order := types.Put{
		TableName:           aws.String("dev-bowline-app"),
		Item:                map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ORDER#o1"}, "sk": &types.AttributeValueMemberS{Value: "ORDER"}},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}
	env, err := e.Emit(ctx, "com.order_created", map[string]any{"order_id": "o1"}, engine.Write{Put: &order})
	if errors.Is(err, engine.ErrConditionFailed) {
		fmt.Println("order o1 exists; no event")
		return
	}
	fmt.Println(env.Seq, env.Hash)
}

// CheckChain needs no table: here a log of three events whose second
// payload was changed after it was sealed.
func ExampleCheckChain() {
	var log []engine.Envelope
	prev := engine.Genesis
	for seq := uint64(1); seq <= 3; seq++ {
		env := engine.Envelope{ID: fmt.Sprintf("ev%d", seq), Type: "bowl.empty", Tenant: "t1", Seq: seq,
			OccurredAt: time.Date(2026, 12, 1, 0, 0, int(seq), 0, time.UTC), Payload: map[string]any{"n": float64(seq)}}
		if err := engine.Seal(&env, prev); err != nil {
			panic(err)
		}
		log, prev = append(log, env), env.Hash
	}
	head := engine.Head{Found: true, Seq: 3, Hash: prev}
	events := func(yield func(engine.Envelope, error) bool) {
		for _, env := range log {
			if !yield(env, nil) {
				return
			}
		}
	}

	rep, _ := engine.CheckChain(engine.ChainCheck{Tenant: "t1"}, events, head)
	fmt.Println(rep.Intact, rep.Events)

	log[1].Payload = map[string]any{"n": 20.0}
	rep, _ = engine.CheckChain(engine.ChainCheck{Tenant: "t1"}, events, head)
	fmt.Println(rep.Intact, rep.FirstBadSeq, rep.Reason)
	// Output:
	// true 3
	// false 2 hash_mismatch
}
