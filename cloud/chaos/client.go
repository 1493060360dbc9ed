package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/cloud/fakes"
)

// client is bowline dev's API client for tenant's token (orders) and the
// run's webhook secret.
func (r *run) client(tenant string) *dev.Client {
	return &dev.Client{URL: r.apiURL, Token: r.tokens[tenant], Secret: webhookSecret, HTTP: &http.Client{Timeout: 10 * time.Second}}
}

func (r *run) fakeOf(kind string) *fakes.Fake {
	for _, f := range r.fakes.All() {
		if f.Kind() == kind {
			return f
		}
	}
	return nil
}

// pay delivers payment.succeeded for the order at the server's price and
// returns the event id; empty when the API answers api.WebhookDuplicate
// (an earlier delivery, whose answer was lost to a fault, was processed:
// the check finds its event in the chain).
func pay(ctx context.Context, c *dev.Client, orderID, paymentID string) (string, error) {
	status, eventID, err := c.Payment(ctx, orderID, paymentID, 4999)
	if err == nil && eventID == "" && status != api.WebhookDuplicate {
		err = fmt.Errorf("payment %s: answer has no event id (status %q)", paymentID, status)
	}
	return eventID, err
}

// badWebhook delivers a well-formed payment.succeeded signed with the
// wrong secret and returns the status the API answered.
func badWebhook(ctx context.Context, c *dev.Client) (int, error) {
	cents := int64(1)
	body, err := json.Marshal(api.PaymentSucceededWebhook("evt_forged", api.PaymentData{PaymentID: "forged", OrderID: "none", AmountCents: &cents, Currency: "USD"}))
	if err != nil {
		return 0, fmt.Errorf("encode forged webhook: %w", err)
	}
	h := map[string]string{api.SignatureHeader: api.Sign([]byte("not-the-secret"), time.Now(), body)}
	status, _, err := c.Post(ctx, "/v1/webhooks/payments", h, body)
	return status, err
}
