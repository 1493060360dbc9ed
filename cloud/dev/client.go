package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
)

// Client places orders and delivers signed payment webhooks to the API.
type Client struct {
	URL    string
	Token  string
	Secret string
	HTTP   *http.Client
}

// Order places an order of one TAG-001 and returns its id. amount is the
// price the caller expects to pay (the server prices the order from its
// price list and refuses it, 409 price_mismatch, when they differ): 4999
// with the default list. 0 sends no amount and takes the server's price.
func (c *Client) Order(ctx context.Context, customer, pet string, amount int) (string, error) {
	req := api.OrderRequest{CustomerID: customer, PetID: pet, Items: []api.Item{{SKU: "TAG-001", Qty: 1}}}
	if amount != 0 {
		cents := int64(amount)
		req.AmountCents = &cents
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("encode order of customer %q: %w", customer, err)
	}
	var out api.Order
	if err := c.post(ctx, "/v1/orders", map[string]string{"Authorization": "Bearer " + c.Token}, body, http.StatusCreated, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

// Pay delivers payment.succeeded for the order and returns the id of the
// com.payment_completed event; the API must answer api.WebhookProcessed.
func (c *Client) Pay(ctx context.Context, orderID, paymentID string, amount int) (string, error) {
	status, eventID, err := c.Payment(ctx, orderID, paymentID, amount)
	if err != nil {
		return "", err
	}
	if status != api.WebhookProcessed {
		return "", fmt.Errorf("pay order %s: status %q; want %s", orderID, status, api.WebhookProcessed)
	}
	return eventID, nil
}

// Payment delivers payment.succeeded for the order, signed with Secret, and
// returns the API's answer: status api.WebhookProcessed with the event id,
// or api.WebhookDuplicate when an earlier delivery of the same payment was
// processed (a retry whose first answer was lost).
func (c *Client) Payment(ctx context.Context, orderID, paymentID string, amount int) (status, eventID string, err error) {
	cents := int64(amount)
	hook := api.PaymentSucceededWebhook("evt_"+paymentID, api.PaymentData{PaymentID: paymentID, OrderID: orderID, AmountCents: &cents, Currency: "USD"})
	body, err := json.Marshal(hook)
	if err != nil {
		return "", "", fmt.Errorf("encode payment %q: %w", paymentID, err)
	}
	var out api.WebhookAnswer
	h := map[string]string{api.SignatureHeader: api.Sign([]byte(c.Secret), time.Now(), body)}
	if err := c.post(ctx, "/v1/webhooks/payments", h, body, http.StatusOK, &out); err != nil {
		return "", "", err
	}
	return out.Status, out.EventID, nil
}

// Post sends body as JSON to path with the headers h and returns the
// status and the answer (at most 1 MiB), whatever the status.
func (c *Client) Post(ctx context.Context, path string, h map[string]string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("POST %s: read answer: %w", path, err)
	}
	return resp.StatusCode, b, nil
}

func (c *Client) post(ctx context.Context, path string, h map[string]string, body []byte, want int, out any) error {
	status, b, err := c.Post(ctx, path, h, body)
	if err != nil {
		return err
	}
	if status != want {
		return fmt.Errorf("POST %s: status %d %s; want %d", path, status, bytes.TrimSpace(b), want)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("POST %s: answer %q: %w", path, b, err)
	}
	return nil
}
