package dev_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/dev"
)

// fakeAPI answers POST /v1/orders and /v1/webhooks/payments like the API,
// decoding each body strictly into cloud/api's types and keeping the last
// of each.
type fakeAPI struct {
	t       *testing.T
	secret  string
	answer  api.WebhookAnswer
	order   api.OrderRequest
	hook    api.PaymentWebhook
	payment api.PaymentData
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	strict := func(b []byte, v any) {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			f.t.Errorf("%s body %s as %T: %v", r.URL.Path, b, v, err)
		}
	}
	var answer any
	switch r.URL.Path {
	case "/v1/orders":
		if got := r.Header.Get("Authorization"); got != "Bearer tok-1" {
			f.t.Errorf("Authorization = %q; want the client's bearer token", got)
		}
		f.order = api.OrderRequest{}
		strict(body, &f.order)
		w.WriteHeader(http.StatusCreated)
		answer = api.Order{ID: "01ORDER", Tenant: "t1", Status: api.StatusPending}
	case "/v1/webhooks/payments":
		if err := api.VerifySignature([]byte(f.secret), r.Header.Get(api.SignatureHeader), body, time.Now(), api.DefaultTolerance); err != nil {
			f.t.Errorf("webhook signature: %v", err)
		}
		f.hook, f.payment = api.PaymentWebhook{}, api.PaymentData{}
		strict(body, &f.hook)
		strict(f.hook.Data, &f.payment)
		answer = f.answer
	default:
		w.WriteHeader(http.StatusNotFound)
		return
	}
	_ = json.NewEncoder(w).Encode(answer)
}

// TestClientBodies: the client sends the API's request types (an order
// without an amount leaves it out, taking the server's price; a payment is
// a signed payment.succeeded in USD) and reads its answer types.
func TestClientBodies(t *testing.T) {
	ctx := context.Background()
	f := &fakeAPI{t: t, secret: "whsec-client-test"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := &dev.Client{URL: srv.URL, Token: "tok-1", Secret: f.secret}

	id, err := c.Order(ctx, "cust-1", "pet-1", 4999)
	cents := int64(4999)
	want := api.OrderRequest{CustomerID: "cust-1", PetID: "pet-1", Items: []api.Item{{SKU: "TAG-001", Qty: 1}}, AmountCents: &cents}
	if err != nil || id != "01ORDER" || !reflect.DeepEqual(f.order, want) {
		t.Errorf("Order(4999) = %q, %v, sent %+v; want 01ORDER, nil, sent %+v", id, err, f.order, want)
	}
	if _, err := c.Order(ctx, "cust-1", "pet-1", 0); err != nil || f.order.AmountCents != nil || f.order.Currency != nil {
		t.Errorf("Order(0) = %v, sent amount %v currency %v; want no amount and no currency", err, f.order.AmountCents, f.order.Currency)
	}

	f.answer = api.WebhookAnswer{Status: api.WebhookProcessed, OrderID: "01ORDER", EventID: "01EVENT"}
	ev, err := c.Pay(ctx, "01ORDER", "pay_1", 4999)
	wantData := api.PaymentData{PaymentID: "pay_1", OrderID: "01ORDER", AmountCents: &cents, Currency: "USD"}
	if err != nil || ev != "01EVENT" || f.hook.ID != "evt_pay_1" || f.hook.Type != api.PaymentSucceeded || !reflect.DeepEqual(f.payment, wantData) {
		t.Errorf("Pay = %q, %v, sent %+v with data %+v; want 01EVENT, nil, evt_pay_1 %s with data %+v",
			ev, err, f.hook, f.payment, api.PaymentSucceeded, wantData)
	}
	f.answer = api.WebhookAnswer{Status: api.WebhookDuplicate, OrderID: "01ORDER"}
	if status, ev, err := c.Payment(ctx, "01ORDER", "pay_1", 4999); err != nil || status != api.WebhookDuplicate || ev != "" {
		t.Errorf("Payment of a repeat = %q, %q, %v; want %s, no event, nil", status, ev, err, api.WebhookDuplicate)
	}
	if _, err := c.Pay(ctx, "01ORDER", "pay_1", 4999); err == nil || !strings.Contains(err.Error(), api.WebhookDuplicate) {
		t.Errorf("Pay of a repeat = %v; want an error saying %s", err, api.WebhookDuplicate)
	}
}
