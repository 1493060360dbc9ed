package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestBodiesKeepTheirJSON pins the JSON of every body type of the API:
// each body, as clients send it and the server answers it today, decodes
// through the server's strict decoder into the value shown and encodes
// back to the same bytes. A renamed or retagged field, or a changed
// omitempty, fails here before it fails a client.
func TestBodiesKeepTheirJSON(t *testing.T) {
	amount, usd := int64(4999), "USD"
	for _, tc := range []struct {
		name string
		body string
		into any // a pointer to a zero value of the body's type
		want any // the value the body holds (not a pointer)
	}{
		{"order, server's price",
			`{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1}]}`,
			new(OrderRequest), OrderRequest{CustomerID: "c1", PetID: "p1", Items: []Item{{SKU: "TAG-001", Qty: 1}}}},
		{"order, expected price",
			`{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":2},{"sku":"FOOD-2KG","qty":1}],"amount_cents":4999,"currency":"USD"}`,
			new(OrderRequest), OrderRequest{CustomerID: "c1", PetID: "p1", Items: []Item{{SKU: "TAG-001", Qty: 2}, {SKU: "FOOD-2KG", Qty: 1}}, AmountCents: &amount, Currency: &usd}},
		{"order answer",
			`{"id":"01JQ7Z8Y9X0W1V2U3T4S5R6Q7P","tenant":"t1","customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1}],"amount_cents":4999,"currency":"USD","status":"pending_payment","correlation_id":"corr-1","created_at":"2026-03-09T07:00:00.000Z"}`,
			new(Order), Order{ID: "01JQ7Z8Y9X0W1V2U3T4S5R6Q7P", Tenant: "t1", CustomerID: "c1", PetID: "p1", Items: []Item{{SKU: "TAG-001", Qty: 1}},
				AmountCents: 4999, Currency: "USD", Status: StatusPending, CorrelationID: "corr-1", CreatedAt: "2026-03-09T07:00:00.000Z"}},
		{"payment webhook",
			`{"id":"evt_1","type":"payment.succeeded","data":{"payment_id":"pay_1","order_id":"o1","amount_cents":4999,"currency":"USD"}}`,
			new(PaymentWebhook), PaymentWebhook{ID: "evt_1", Type: PaymentSucceeded,
				Data: json.RawMessage(`{"payment_id":"pay_1","order_id":"o1","amount_cents":4999,"currency":"USD"}`)}},
		{"payment webhook built by PaymentSucceededWebhook",
			`{"id":"evt_1","type":"payment.succeeded","data":{"payment_id":"pay_1","order_id":"o1","amount_cents":4999,"currency":"USD"}}`,
			new(PaymentWebhook), PaymentSucceededWebhook("evt_1", PaymentData{PaymentID: "pay_1", OrderID: "o1", AmountCents: &amount, Currency: "USD"})},
		{"other webhook",
			`{"id":"evt_9","type":"payment.refunded","data":{}}`,
			new(PaymentWebhook), PaymentWebhook{ID: "evt_9", Type: "payment.refunded", Data: json.RawMessage(`{}`)}},
		{"payment data",
			`{"payment_id":"pay_1","order_id":"o1","amount_cents":4999,"currency":"USD"}`,
			new(PaymentData), PaymentData{PaymentID: "pay_1", OrderID: "o1", AmountCents: &amount, Currency: "USD"}},
		{"webhook answer, processed",
			`{"status":"processed","order_id":"o1","event_id":"01JQ7Z8Y9X0W1V2U3T4S5R6Q7Q"}`,
			new(WebhookAnswer), WebhookAnswer{Status: WebhookProcessed, OrderID: "o1", EventID: "01JQ7Z8Y9X0W1V2U3T4S5R6Q7Q"}},
		{"webhook answer, duplicate",
			`{"status":"duplicate","order_id":"o1"}`,
			new(WebhookAnswer), WebhookAnswer{Status: WebhookDuplicate, OrderID: "o1"}},
		{"webhook answer, ignored",
			`{"status":"ignored"}`,
			new(WebhookAnswer), WebhookAnswer{Status: WebhookIgnored}},
		{"error answer",
			`{"error":{"code":"order_not_found","message":"order \"o1\" not found"}}`,
			new(ErrorAnswer), ErrorAnswer{Error: ErrorDetail{Code: CodeOrderNotFound, Message: `order "o1" not found`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := decodeStrict([]byte(tc.body), tc.into); err != nil {
				t.Fatalf("decodeStrict(%s): %v", tc.body, err)
			}
			if got := reflect.ValueOf(tc.into).Elem().Interface(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decodeStrict(%s) = %+v; want %+v", tc.body, got, tc.want)
			}
			b, err := json.Marshal(tc.want)
			if err != nil {
				t.Fatalf("json.Marshal(%+v): %v", tc.want, err)
			}
			if !bytes.Equal(b, []byte(tc.body)) {
				t.Errorf("json.Marshal(%+v) = %s; want %s", tc.want, b, tc.body)
			}
		})
	}
}
