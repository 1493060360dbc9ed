package api

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

// The rows the API writes (docs/tables.md lists every table's rows). All are
// writes of an engine.EmitEvent, so they commit with their event or not at
// all.
//
// App table (pk and sk; its stream feeds the record-change lane, so every
// change here becomes a row.order.* envelope). Orders are keyed by id alone,
// because the payment webhook knows only the order id; the tenant is an
// attribute, read from the row and never from the webhook:
//
//	pk = "ORDER#<id>"  sk = "ORDER"   (orderKey; no TTL)
//	entity = "order", tenant, id, customer_id, pet_id, items (L of M sku, qty),
//	amount_cents (N, priced from Config.Prices), currency, status, correlation_id, created_at, [payment_id, paid_at]
//
// POST /v1/orders puts it (condition: absent) with com.order_created; the
// payment webhook sets status, payment_id and paid_at (condition: status is
// pending_payment) with com.payment_completed and reads it first.
//
// Inbox table (pk only, TTL attribute "ttl"), beside the engine's EMIT# rows;
// docs/commerce.md says why they are not app rows:
//
//	pk = "APIKEY#<tenant>#<Idempotency-Key>"   (idemKey)
//	     body_hash, status (N, HTTP status), response, order_id, created_at,
//	     ttl (N, epoch seconds: created_at + Config.IdempotencyTTL, default 24 h)
//	pk = "PAYMENT#<payment_id>"
//	     order_id, tenant, webhook_id, created_at,
//	     ttl (N, epoch seconds: created_at + 90 days)
//
// Both are put on the condition that they are absent. An APIKEY# row is read
// back (replay) when a repeated key fails that condition; a PAYMENT# row is
// never read: its condition alone stops one payment from paying two orders.
const (
	OrderSK         = "ORDER"
	EntityOrder     = "order"
	orderPKPrefix   = "ORDER#"
	idemPrefix      = "APIKEY#"
	paymentPrefix   = "PAYMENT#"
	paymentDedupTTL = 90 * 24 * time.Hour
)

// OrderPK is the app-table partition key of order id.
func OrderPK(id string) string { return orderPKPrefix + id }

func orderKey(id string) map[string]types.AttributeValue { return attr.Key(OrderPK(id), OrderSK) }

func idemPK(tenant, key string) string { return idemPrefix + tenant + "#" + key }

func idemKey(tenant, key string) map[string]types.AttributeValue {
	return attr.HashKey(idemPK(tenant, key))
}

func paymentPK(paymentID string) string { return paymentPrefix + paymentID }
