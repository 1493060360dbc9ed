package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/fakes"
)

// client places orders and delivers signed payment webhooks to the API.
type client struct {
	url  string
	http *http.Client
}

func (r *run) client() *client {
	return &client{url: r.apiURL, http: &http.Client{Timeout: 10 * time.Second}}
}

func (r *run) fakeOf(kind string) *fakes.Fake {
	for _, f := range r.fakes.All() {
		if f.Kind() == kind {
			return f
		}
	}
	return nil
}

func (c *client) post(ctx context.Context, path string, h map[string]string, body []byte, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("POST %s: answer %q: %w", path, b, err)
		}
	}
	return resp.StatusCode, nil
}

// order places an order for tenant (through its token) and returns its id.
func (c *client) order(ctx context.Context, token, customer, pet string) (string, error) {
	body, _ := json.Marshal(map[string]any{"customer_id": customer, "pet_id": pet,
		"items": []map[string]any{{"sku": "TAG-001", "qty": 1}}})
	var out struct {
		ID string `json:"id"`
	}
	status, err := c.post(ctx, "/v1/orders", map[string]string{"Authorization": "Bearer " + token}, body, &out)
	if err == nil && status != http.StatusCreated {
		err = fmt.Errorf("POST /v1/orders: status %d; want 201", status)
	}
	return out.ID, err
}

// pay delivers payment.succeeded for the order and returns the event id;
// empty when the API answers "duplicate" (an earlier delivery, whose answer
// was lost to a fault, was processed: the check finds its event in the
// chain).
func (c *client) pay(ctx context.Context, orderID, paymentID string) (string, error) {
	body, _ := json.Marshal(map[string]any{"id": "evt_" + paymentID, "type": api.PaymentSucceeded,
		"data": map[string]any{"payment_id": paymentID, "order_id": orderID, "amount_cents": 4999, "currency": "USD"}})
	var out struct {
		Status  string `json:"status"`
		EventID string `json:"event_id"`
	}
	h := map[string]string{api.SignatureHeader: api.Sign([]byte(webhookSecret), time.Now(), body)}
	status, err := c.post(ctx, "/v1/webhooks/payments", h, body, &out)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("POST /v1/webhooks/payments: status %d; want 200", status)
	}
	if err == nil && out.EventID == "" && out.Status != "duplicate" {
		err = fmt.Errorf("payment %s: answer has no event id (status %q)", paymentID, out.Status)
	}
	return out.EventID, err
}

// badWebhook delivers a webhook signed with the wrong secret.
func (c *client) badWebhook(ctx context.Context) (int, error) {
	body := []byte(`{"id":"evt_forged","type":"` + api.PaymentSucceeded + `","data":{"payment_id":"forged","order_id":"none","amount_cents":1}}`)
	h := map[string]string{api.SignatureHeader: api.Sign([]byte("not-the-secret"), time.Now(), body)}
	return c.post(ctx, "/v1/webhooks/payments", h, body, nil)
}
