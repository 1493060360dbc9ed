package api

// Order statuses and the bound on an Idempotency-Key.
const (
	StatusPending     = "pending_payment"
	StatusPaid        = "paid"
	maxIdempotencyKey = 255
)

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
	Currency      string `json:"currency" dynamodbav:"currency"`
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
