package api

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// App-table layout of an order (DESIGN.md leaves the app rows to their
// owners). Orders are keyed by id alone, because the payment webhook knows
// only the order id; the tenant is an attribute, read from the row and never
// from the webhook:
//
//	pk = ORDER#<id>  sk = ORDER
//	entity = "order", tenant, id, customer_id, pet_id, items (L of M sku, qty),
//	amount_cents (N), status, correlation_id, created_at, [payment_id, paid_at]
//
// Dedup rows live in the inbox table beside the engine's own:
//
//	pk = APIKEY#<tenant>#<Idempotency-Key>: body_hash, status, response, order_id, ttl
//	pk = PAYMENT#<payment_id>:              order_id, tenant, ttl
const (
	OrderSK           = "ORDER"
	EntityOrder       = "order"
	StatusPending     = "pending_payment"
	StatusPaid        = "paid"
	idemPrefix        = "APIKEY#"
	paymentPrefix     = "PAYMENT#"
	paymentDedupTTL   = 90 * 24 * time.Hour
	maxIdempotencyKey = 255
)

// OrderPK is the app-table partition key of order id.
func OrderPK(id string) string { return "ORDER#" + id }

func idemPK(tenant, key string) string { return idemPrefix + tenant + "#" + key }

func paymentPK(paymentID string) string { return paymentPrefix + paymentID }

// Order is an order as stored and as returned by POST /v1/orders.
type Order struct {
	PK            string `json:"-" dynamodbav:"pk"`
	SK            string `json:"-" dynamodbav:"sk"`
	Entity        string `json:"-" dynamodbav:"entity"`
	ID            string `json:"id" dynamodbav:"id"`
	Tenant        string `json:"tenant" dynamodbav:"tenant"`
	CustomerID    string `json:"customer_id" dynamodbav:"customer_id"`
	PetID         string `json:"pet_id" dynamodbav:"pet_id"`
	Items         []Item `json:"items" dynamodbav:"items"`
	AmountCents   int64  `json:"amount_cents" dynamodbav:"amount_cents"`
	Status        string `json:"status" dynamodbav:"status"`
	CorrelationID string `json:"correlation_id" dynamodbav:"correlation_id"`
	CreatedAt     string `json:"created_at" dynamodbav:"created_at"`
	PaymentID     string `json:"payment_id,omitempty" dynamodbav:"payment_id,omitempty"`
	PaidAt        string `json:"paid_at,omitempty" dynamodbav:"paid_at,omitempty"`
}

// Item is one order line.
type Item struct {
	SKU string `json:"sku" dynamodbav:"sku"`
	Qty int    `json:"qty" dynamodbav:"qty"`
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
