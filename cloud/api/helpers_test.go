package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

const (
	testSecret = "whsec_test"
	opsToken   = "ops-secret"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// fixture is an API on the shared local stack with two fresh tenants.
type fixture struct {
	t       *testing.T
	srv     *httptest.Server
	api     *api.API
	db      *dynamodb.Client
	tenantA string
	tokenA  string
	tenantB string
	tokenB  string
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	names := lstest.Names(t)
	f := &fixture{t: t, tenantA: "ta-" + randHex(4), tokenA: "tok-" + randHex(8), tenantB: "tb-" + randHex(4), tokenB: "tok-" + randHex(8)}
	a, err := app.Open(app.Config{AWS: cfg, Names: names, Logger: testkit.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatalf("app.Open: %v", err)
	}
	srv, err := a.API(api.Settings{
		Tokens:        map[string]string{f.tokenA: f.tenantA, f.tokenB: f.tenantB},
		OpsToken:      opsToken,
		WebhookSecret: testSecret,
	}, nil)
	if err != nil {
		t.Fatalf("app.API: %v", err)
	}
	f.srv, f.api = httptest.NewServer(srv), srv
	t.Cleanup(func() {
		f.srv.Close()
		a.Close()
	})
	f.db = dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	return f
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response %d body %q: %v", r.Status, r.Body, err)
	}
	return m
}

// code is the error code of an error answer; "" for any other JSON.
func (r response) code(t *testing.T) string {
	t.Helper()
	var e api.ErrorAnswer
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatalf("response %d body %q: %v", r.Status, r.Body, err)
	}
	return e.Error.Code
}

// decode decodes the body into v, refusing a key v has no field for.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("response %d body %q as %T: %v", r.Status, r.Body, v, err)
	}
}

// order is the body of a 201 to POST /v1/orders.
func (r response) order(t *testing.T) api.Order {
	t.Helper()
	var o api.Order
	r.decode(t, &o)
	return o
}

// answer is the body of a 200 to POST /v1/webhooks/payments.
func (r response) answer(t *testing.T) api.WebhookAnswer {
	t.Helper()
	var a api.WebhookAnswer
	r.decode(t, &a)
	return a
}

func (f *fixture) do(method, path string, header map[string]string, body []byte) response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

const orderBody = `{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1}],"amount_cents":4999}`

func (f *fixture) order(token, key, body string) response {
	f.t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return f.do(http.MethodPost, "/v1/orders", h, []byte(body))
}

// mustOrder creates an order for tenant A and returns its id.
func (f *fixture) mustOrder() string {
	f.t.Helper()
	r := f.order(f.tokenA, "", orderBody)
	if r.Status != http.StatusCreated {
		f.t.Fatalf("POST /v1/orders = %d %s; want 201", r.Status, r.Body)
	}
	return r.order(f.t).ID
}

// paymentBody is payment.succeeded of amount USD cents for the order,
// with webhook id evt_<paymentID>.
func paymentBody(orderID, paymentID string, amount int64) []byte {
	return webhookBody("evt_"+paymentID, api.PaymentData{PaymentID: paymentID, OrderID: orderID, AmountCents: &amount, Currency: "USD"})
}

// webhookBody is payment.succeeded with webhook id and data d.
func webhookBody(id string, d api.PaymentData) []byte {
	b, err := json.Marshal(api.PaymentSucceededWebhook(id, d))
	if err != nil {
		panic(err) // api.PaymentData always encodes
	}
	return b
}

func (f *fixture) webhook(body []byte, sig string) response {
	f.t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	if sig != "" {
		h[api.SignatureHeader] = sig
	}
	return f.do(http.MethodPost, "/v1/webhooks/payments", h, body)
}

func sign(body []byte) string { return api.Sign([]byte(testSecret), time.Now(), body) }

// events returns tenant's committed events, in order.
func (f *fixture) events(tenant string) []engine.Envelope {
	f.t.Helper()
	var out []engine.Envelope
	for env, err := range engine.NewLog(f.db, lstest.Names(f.t).EventsTable()).After(context.Background(), tenant, 0, engine.ReadOptions{}) {
		if err != nil {
			f.t.Fatalf("read events of %s: %v", tenant, err)
		}
		out = append(out, env)
	}
	return out
}

func (f *fixture) orderRow(id string) map[string]types.AttributeValue {
	f.t.Helper()
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(lstest.Names(f.t).AppTable()), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: api.OrderPK(id)}, "sk": &types.AttributeValueMemberS{Value: api.OrderSK}},
	})
	if err != nil {
		f.t.Fatalf("get order %s: %v", id, err)
	}
	return out.Item
}

func attr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func types_(evs []engine.Envelope) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}
