package subscribers

import (
	"context"
	"errors"
	"fmt"

	"github.com/bowline-iot/bowline/cloud/catalog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
)

// decodePayment returns com.payment_completed's payload (cloud/api), with
// the ids every commerce handler needs.
func decodePayment(env engine.Envelope) (catalog.PaymentCompleted, error) {
	p, err := catalog.Decode[catalog.PaymentCompleted](env)
	if err != nil {
		return catalog.PaymentCompleted{}, badPayload(env.Type, env.ID, "%v", err)
	}
	if p.OrderID == "" || p.PaymentID == "" || p.CustomerID == "" {
		return catalog.PaymentCompleted{}, badPayload(env.Type, env.ID, "order_id, payment_id and customer_id are required")
	}
	return p, nil
}

// providerItems are a payment's order lines as the providers take them.
func providerItems(items []catalog.Item) []adapters.Item {
	if items == nil {
		return nil
	}
	out := make([]adapters.Item, len(items))
	for i, it := range items {
		out[i] = adapters.Item(it)
	}
	return out
}

func (s *Set) shopifyMirror(ctx context.Context, env engine.Envelope) error {
	p, err := decodePayment(env)
	if err != nil {
		return err
	}
	_, err = s.cfg.Shop.MirrorOrder(ctx, adapters.Key(env.ID, catalog.SubShopifyMirror), adapters.ShopifyOrder{
		OrderID: p.OrderID, Tenant: env.Tenant, CustomerID: p.CustomerID, PaymentID: p.PaymentID,
		AmountCents: p.AmountCents, Items: providerItems(p.Items),
	})
	return classify(err)
}

func (s *Set) bookShipment(ctx context.Context, env engine.Envelope) error {
	p, err := decodePayment(env)
	if err != nil {
		return err
	}
	_, err = s.cfg.Shipping.BookShipment(ctx, adapters.Key(env.ID, catalog.SubBookShipment), adapters.Shipment{
		OrderID: p.OrderID, Tenant: env.Tenant, CustomerID: p.CustomerID, Items: providerItems(p.Items),
	})
	return classify(err)
}

func (s *Set) notifyBuyer(ctx context.Context, env engine.Envelope) error {
	p, err := decodePayment(env)
	if err != nil {
		return err
	}
	return classify(s.cfg.Notify.Send(ctx, adapters.Key(env.ID, catalog.SubNotifyBuyer), adapters.Notification{
		Tenant: env.Tenant, To: "customer:" + p.CustomerID, Channel: "email", Template: env.Type,
		Data: map[string]any{"order_id": p.OrderID, "amount_cents": p.AmountCents},
	}))
}

// markTagOrdered records on the pet's row that its tag was ordered. The
// write is conditional on the order, so a second run changes nothing (and
// the record-change lane sees one modification).
func (s *Set) markTagOrdered(ctx context.Context, env engine.Envelope) error {
	p, err := decodePayment(env)
	if err != nil {
		return err
	}
	if p.PetID == "" {
		return badPayload(env.Type, env.ID, "pet_id is required")
	}
	_, err = s.cfg.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.cfg.Names.AppTable()),
		Key:       petKey(env.Tenant, p.PetID),
		UpdateExpression: aws.String("SET entity = :e, tenant = :t, pet_id = :p, tag_status = :st, " +
			"tag_order_id = :o, tag_ordered_at = :at, tag_event_id = :ev"),
		ConditionExpression: aws.String("attribute_not_exists(tag_order_id) OR tag_order_id <> :o"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":e": attr.S(EntityPet), ":t": attr.S(env.Tenant), ":p": attr.S(p.PetID), ":st": attr.S("ordered"),
			":o": attr.S(p.OrderID), ":at": attr.S(env.OccurredAt.UTC().Format(engine.TimeLayout)), ":ev": attr.S(env.ID),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // this order's tag is already marked
	}
	if err != nil {
		return fmt.Errorf("mark tag of pet %q ordered (order %s): %w", p.PetID, p.OrderID, err)
	}
	return nil
}
