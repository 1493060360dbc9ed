package subscribers

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/engine"
)

// payment is the payload of com.payment_completed (cloud/api).
type payment struct {
	OrderID     string          `json:"order_id"`
	PaymentID   string          `json:"payment_id"`
	AmountCents int64           `json:"amount_cents"`
	CustomerID  string          `json:"customer_id"`
	PetID       string          `json:"pet_id"`
	Items       []adapters.Item `json:"items"`
}

func decodePayment(env engine.Envelope) (payment, error) {
	var p payment
	if err := env.DecodePayload(&p); err != nil {
		return payment{}, badPayload(env.Type, env.ID, "%v", err)
	}
	if p.OrderID == "" || p.PaymentID == "" || p.CustomerID == "" {
		return payment{}, badPayload(env.Type, env.ID, "order_id, payment_id and customer_id are required")
	}
	return p, nil
}

func (s *Set) shopifyMirror(ctx context.Context, env engine.Envelope) error {
	p, err := decodePayment(env)
	if err != nil {
		return err
	}
	_, err = s.cfg.Shop.MirrorOrder(ctx, adapters.Key(env.ID, ShopifyMirror), adapters.ShopifyOrder{
		OrderID: p.OrderID, Tenant: env.Tenant, CustomerID: p.CustomerID, PaymentID: p.PaymentID,
		AmountCents: p.AmountCents, Items: p.Items,
	})
	return classify(err)
}

func (s *Set) bookShipment(ctx context.Context, env engine.Envelope) error {
	p, err := decodePayment(env)
	if err != nil {
		return err
	}
	_, err = s.cfg.Shipping.BookShipment(ctx, adapters.Key(env.ID, BookShipment), adapters.Shipment{
		OrderID: p.OrderID, Tenant: env.Tenant, CustomerID: p.CustomerID, Items: p.Items,
	})
	return classify(err)
}

func (s *Set) notifyBuyer(ctx context.Context, env engine.Envelope) error {
	p, err := decodePayment(env)
	if err != nil {
		return err
	}
	return classify(s.cfg.Notify.Send(ctx, adapters.Key(env.ID, NotifyBuyer), adapters.Notification{
		Tenant: env.Tenant, To: "customer:" + p.CustomerID, Channel: "email", Template: env.Type,
		Data: map[string]any{"order_id": p.OrderID, "amount_cents": p.AmountCents},
	}))
}

// PetPK and PetSK key a pet's app-table row (entity "pet").
func PetPK(tenant, petID string) string { return "PET#" + tenant + "#" + petID }

// PetSK is the sort key of a pet's own row.
const PetSK = "PET"

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
		Key:       map[string]types.AttributeValue{"pk": str(PetPK(env.Tenant, p.PetID)), "sk": str(PetSK)},
		UpdateExpression: aws.String("SET entity = :e, tenant = :t, pet_id = :p, tag_status = :st, " +
			"tag_order_id = :o, tag_ordered_at = :at, tag_event_id = :ev"),
		ConditionExpression: aws.String("attribute_not_exists(tag_order_id) OR tag_order_id <> :o"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":e": str("pet"), ":t": str(env.Tenant), ":p": str(p.PetID), ":st": str("ordered"),
			":o": str(p.OrderID), ":at": str(env.OccurredAt.UTC().Format(engine.TimeLayout)), ":ev": str(env.ID),
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

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
