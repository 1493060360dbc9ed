package api_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(childMain())
	}
	lstest.Main(m, localstack.DynamoDB, localstack.SQS)
}

func TestOrderRowAndEventCommitTogether(t *testing.T) {
	f := newFixture(t)
	r := f.order(f.tokenA, "", orderBody)
	if r.Status != http.StatusCreated {
		t.Fatalf("POST /v1/orders = %d %s; want 201", r.Status, r.Body)
	}
	o := r.order(t)
	id := o.ID
	if o.Status != api.StatusPending || o.Tenant != f.tenantA || id == "" {
		t.Errorf("order = %v; want status pending_payment, tenant %s and an id", o, f.tenantA)
	}
	row := f.orderRow(id)
	if attr(row, "status") != "pending_payment" || attr(row, "tenant") != f.tenantA || attr(row, "entity") != "order" {
		t.Errorf("order row = %v; want status pending_payment, tenant %s, entity order", row, f.tenantA)
	}
	evs := f.events(f.tenantA)
	if len(evs) != 1 || evs[0].Type != catalog.TypeOrderCreated || evs[0].Payload["order_id"] != id {
		t.Fatalf("events of %s = %v; want one com.order_created for %s", f.tenantA, types_(evs), id)
	}
	created, err := catalog.Decode[catalog.OrderCreated](evs[0])
	want := catalog.OrderCreated{OrderID: id, CustomerID: "c1", PetID: "p1", Items: []catalog.Item{{SKU: "TAG-001", Qty: 1}}, AmountCents: 4999, Currency: "USD"}
	if err != nil || !reflect.DeepEqual(created, want) {
		t.Errorf("com.order_created payload = %+v, %v; want %+v", created, err, want)
	}
	if evs[0].CorrelationID != attr(row, "correlation_id") {
		t.Errorf("event correlation %q; want the order row's %q", evs[0].CorrelationID, attr(row, "correlation_id"))
	}
	if n := len(f.events(f.tenantB)); n != 0 {
		t.Errorf("events of the other tenant = %d; want 0", n)
	}
}

func TestOrderAuthAndValidation(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name   string
		header map[string]string
		body   string
		status int
		code   string
	}{
		{"no token", nil, orderBody, 401, api.CodeUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, orderBody, 401, api.CodeUnauthorized},
		{"basic scheme", map[string]string{"Authorization": "Basic " + f.tokenA}, orderBody, 401, api.CodeUnauthorized},
		{"ops token is not a tenant", map[string]string{"Authorization": "Bearer " + opsToken}, orderBody, 401, api.CodeUnauthorized},
		{"token prefix", map[string]string{"Authorization": "Bearer " + f.tokenA[:len(f.tokenA)-1]}, orderBody, 401, api.CodeUnauthorized},
		{"not json", map[string]string{"Authorization": "Bearer " + f.tokenA}, `{"customer_id":`, 400, api.CodeInvalidJSON},
		{"no items", map[string]string{"Authorization": "Bearer " + f.tokenA}, `{"customer_id":"c1","pet_id":"p1","items":[],"amount_cents":1}`, 400, api.CodeInvalidRequest},
		{"qty 0", map[string]string{"Authorization": "Bearer " + f.tokenA}, `{"customer_id":"c1","pet_id":"p1","items":[{"sku":"A","qty":0}],"amount_cents":1}`, 400, api.CodeInvalidRequest},
		{"sku not in the price list", map[string]string{"Authorization": "Bearer " + f.tokenA}, `{"customer_id":"c1","pet_id":"p1","items":[{"sku":"A","qty":1}]}`, 400, api.CodeInvalidRequest},
		{"too large", map[string]string{"Authorization": "Bearer " + f.tokenA}, `{"customer_id":"` + strings.Repeat("x", 2<<20) + `"}`, 413, api.CodeBodyTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(http.MethodPost, "/v1/orders", tc.header, []byte(tc.body))
			if r.Status != tc.status || r.code(t) != tc.code {
				t.Errorf("POST /v1/orders = %d %s; want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
	if n := len(f.events(f.tenantA)); n != 0 {
		t.Errorf("events after refused orders = %d; want 0", n)
	}
	if r := f.do(http.MethodGet, "/v1/orders", nil, nil); r.Status != 405 || r.code(t) != api.CodeMethodNotAllowed {
		t.Errorf("GET /v1/orders = %d %s; want 405 %s", r.Status, r.Body, api.CodeMethodNotAllowed)
	}
	if r := f.do(http.MethodGet, "/v2/nothing", nil, nil); r.Status != 404 || r.code(t) != api.CodeNotFound {
		t.Errorf("GET /v2/nothing = %d %s; want 404 %s", r.Status, r.Body, api.CodeNotFound)
	}
}

func TestIdempotencyKey(t *testing.T) {
	f := newFixture(t)
	first := f.order(f.tokenA, "key-1", orderBody)
	if first.Status != http.StatusCreated {
		t.Fatalf("first POST = %d %s; want 201", first.Status, first.Body)
	}
	// The same body re-serialised (other key order, other spacing) is the
	// same body.
	same := `{ "amount_cents": 4999, "items": [ {"qty":1, "sku":"TAG-001"} ], "pet_id":"p1", "customer_id":"c1" }`
	again := f.order(f.tokenA, "key-1", same)
	if again.Status != http.StatusCreated || string(again.Body) != string(first.Body) || again.Header.Get(api.ReplayedHeader) != "true" {
		t.Errorf("repeat POST = %d %s (replayed %q); want 201 with the first body %s, replayed true", again.Status, again.Body, again.Header.Get(api.ReplayedHeader), first.Body)
	}
	other := f.order(f.tokenA, "key-1", strings.Replace(orderBody, `"p1"`, `"p2"`, 1))
	if other.Status != http.StatusUnprocessableEntity || other.code(t) != api.CodeIdempotencyKeyReused {
		t.Errorf("same key, other body = %d %s; want 422 %s", other.Status, other.Body, api.CodeIdempotencyKeyReused)
	}
	// Keys are per tenant: tenant B's key-1 is its own.
	b := f.order(f.tokenB, "key-1", orderBody)
	if b.Status != http.StatusCreated || b.Header.Get(api.ReplayedHeader) != "" || b.order(t).ID == first.order(t).ID {
		t.Errorf("tenant B with key-1 = %d %s; want a new 201 order", b.Status, b.Body)
	}
	if got := types_(f.events(f.tenantA)); len(got) != 1 {
		t.Errorf("events of tenant A = %v; want exactly one com.order_created", got)
	}
	// Concurrent repeats: one order, every answer the same.
	const n = 8
	res := make(chan response, n)
	for range n {
		go func() { res <- f.order(f.tokenA, "key-2", orderBody) }()
	}
	var ids []string
	for range n {
		r := <-res
		if r.Status != http.StatusCreated {
			t.Fatalf("concurrent POST = %d %s; want 201", r.Status, r.Body)
		}
		ids = append(ids, r.order(t).ID)
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("concurrent repeats gave order ids %v; want one id", ids)
		}
	}
	if got := types_(f.events(f.tenantA)); len(got) != 2 {
		t.Errorf("events of tenant A after key-2 x%d = %v; want 2", n, got)
	}
}

func TestPaymentWebhook(t *testing.T) {
	f := newFixture(t)
	id := f.mustOrder()
	body := paymentBody(id, "pay_"+randHex(4), 4999)
	stale := api.Sign([]byte(testSecret), time.Now().Add(-301*time.Second), body)
	future := api.Sign([]byte(testSecret), time.Now().Add(301*time.Second), body)
	forged := api.Sign([]byte("not-the-secret"), time.Now(), body)
	for _, tc := range []struct {
		name, sig, code string
	}{
		{"no signature", "", api.CodeInvalidSignature},
		{"wrong secret", forged, api.CodeInvalidSignature},
		{"garbage", "t=1,v1=zz", api.CodeInvalidSignature},
		{"stale", stale, api.CodeSignatureExpired},
		{"future", future, api.CodeSignatureExpired},
	} {
		r := f.webhook(body, tc.sig)
		if r.Status != http.StatusUnauthorized || r.code(t) != tc.code {
			t.Errorf("%s: webhook = %d %s; want 401 %s", tc.name, r.Status, r.Body, tc.code)
		}
	}
	// A valid signature over another body does not pass either.
	if r := f.webhook(paymentBody(id, "pay_other", 4999), sign(body)); r.Status != 401 {
		t.Errorf("signature of another body: webhook = %d; want 401", r.Status)
	}
	if got := types_(f.events(f.tenantA)); len(got) != 1 || attr(f.orderRow(id), "status") != "pending_payment" {
		t.Fatalf("after refused webhooks: events %v, order %s; want only com.order_created and pending_payment", got, attr(f.orderRow(id), "status"))
	}

	r := f.webhook(body, sign(body))
	if r.Status != http.StatusOK || r.answer(t).Status != api.WebhookProcessed {
		t.Fatalf("webhook = %d %s; want 200 processed", r.Status, r.Body)
	}
	row := f.orderRow(id)
	if attr(row, "status") != "paid" || attr(row, "payment_id") == "" {
		t.Errorf("order row after payment = %v; want paid with its payment id", row)
	}
	evs := f.events(f.tenantA)
	if got := types_(evs); len(got) != 2 || got[1] != catalog.TypePaymentCompleted {
		t.Fatalf("events = %v; want com.order_created, com.payment_completed", got)
	}
	if evs[1].Tenant != f.tenantA || evs[1].CorrelationID != evs[0].CorrelationID || evs[1].Payload["order_id"] != id {
		t.Errorf("payment event = %+v; want tenant %s, the order's correlation and order id", evs[1], f.tenantA)
	}
	paid, err := catalog.Decode[catalog.PaymentCompleted](evs[1])
	wantPaid := catalog.PaymentCompleted{OrderID: id, PaymentID: attr(row, "payment_id"), AmountCents: 4999, Currency: "USD",
		CustomerID: "c1", PetID: "p1", Items: []catalog.Item{{SKU: "TAG-001", Qty: 1}}}
	if err != nil || !reflect.DeepEqual(paid, wantPaid) {
		t.Errorf("com.payment_completed payload = %+v, %v; want %+v", paid, err, wantPaid)
	}

	// Redelivery (fresh signature, same payment): 200, nothing emitted.
	r = f.webhook(body, sign(body))
	if r.Status != http.StatusOK || r.answer(t).Status != api.WebhookDuplicate {
		t.Errorf("repeated webhook = %d %s; want 200 duplicate", r.Status, r.Body)
	}
	// Another payment for the paid order is a conflict.
	b2 := paymentBody(id, "pay_second", 4999)
	if r := f.webhook(b2, sign(b2)); r.Status != http.StatusConflict || r.code(t) != api.CodeOrderAlreadyPaid {
		t.Errorf("second payment = %d %s; want 409 %s", r.Status, r.Body, api.CodeOrderAlreadyPaid)
	}
	if got := types_(f.events(f.tenantA)); len(got) != 2 {
		t.Errorf("events after repeats = %v; want still 2", got)
	}

	// The same payment id on another order emits nothing.
	id2 := f.mustOrder()
	b3 := paymentBody(id2, attr(row, "payment_id"), 4999)
	if r := f.webhook(b3, sign(b3)); r.Status != http.StatusConflict || r.code(t) != api.CodePaymentReused {
		t.Errorf("reused payment id = %d %s; want 409 %s", r.Status, r.Body, api.CodePaymentReused)
	}
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
		code   string
	}{
		{"unknown order", paymentBody("01NOSUCHORDER", "pay_x", 4999), 404, api.CodeOrderNotFound},
		{"amount mismatch", paymentBody(id2, "pay_y", 1), 422, api.CodeAmountMismatch},
		{"not json", []byte(`{"id":`), 400, api.CodeInvalidJSON},
	} {
		if r := f.webhook(tc.body, sign(tc.body)); r.Status != tc.status || r.code(t) != tc.code {
			t.Errorf("%s: webhook = %d %s; want %d %s", tc.name, r.Status, r.Body, tc.status, tc.code)
		}
	}
	ignored := []byte(`{"id":"evt_9","type":"payment.refunded","data":{}}`)
	if r := f.webhook(ignored, sign(ignored)); r.Status != 200 || r.answer(t).Status != api.WebhookIgnored {
		t.Errorf("other webhook type = %d %s; want 200 ignored", r.Status, r.Body)
	}
	if got := types_(f.events(f.tenantA)); len(got) != 4 {
		t.Errorf("events at the end = %v; want 2 order_created + 1 payment_completed + 1 payment_refused", got)
	}
}

func TestConcurrentWebhookDeliveriesEmitOnce(t *testing.T) {
	f := newFixture(t)
	id := f.mustOrder()
	body := paymentBody(id, "pay_"+randHex(4), 4999)
	const n = 6
	res := make(chan response, n)
	for range n {
		go func() { res <- f.webhook(body, sign(body)) }()
	}
	processed := 0
	for range n {
		r := <-res
		if r.Status != 200 {
			t.Fatalf("concurrent webhook = %d %s; want 200", r.Status, r.Body)
		}
		if r.answer(t).Status == api.WebhookProcessed {
			processed++
		}
	}
	if processed != 1 {
		t.Errorf("processed deliveries = %d; want 1 (the rest duplicate)", processed)
	}
	if got := types_(f.events(f.tenantA)); len(got) != 2 {
		t.Errorf("events = %v; want order_created + one payment_completed", got)
	}
}

func TestReconcileAndProbes(t *testing.T) {
	f := newFixture(t)
	f.mustOrder()
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer " + f.tokenA}, {"Authorization": "Bearer wrong"}} {
		if r := f.do(http.MethodGet, "/v1/ops/reconcile", h, nil); r.Status != 401 || r.code(t) != api.CodeUnauthorized {
			t.Errorf("reconcile with %v = %d %s; want 401", h, r.Status, r.Body)
		}
	}
	r := f.do(http.MethodGet, "/v1/ops/reconcile", map[string]string{"Authorization": "Bearer " + opsToken}, nil)
	if r.Status != 200 {
		t.Fatalf("reconcile = %d %s; want 200", r.Status, r.Body)
	}
	rep := r.json(t)
	found := false
	for _, x := range rep["tenants"].([]any) {
		tr := x.(map[string]any)
		if tr["tenant"] == f.tenantA {
			found = true
			if tr["chain_intact"] != true || tr["events"] != 1.0 {
				t.Errorf("reconcile tenant %s = %v; want 1 event, chain intact", f.tenantA, tr)
			}
		}
	}
	for _, k := range []string{"dead_letters", "dlq_depth", "unmatched"} {
		if _, ok := rep[k].(float64); !ok {
			t.Errorf("reconcile %s = %v; want a number", k, rep[k])
		}
	}
	if !found {
		t.Errorf("reconcile tenants = %v; want %s among them", rep["tenants"], f.tenantA)
	}
	if r := f.do(http.MethodGet, "/healthz", nil, nil); r.Status != 200 {
		t.Errorf("/healthz = %d; want 200", r.Status)
	}
	// The metrics are served by MetricsHandler on a listener of its own.
	rec := httptest.NewRecorder()
	f.api.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{`bowline_api_requests_total{code="201",route="/v1/orders"} 1`, `bowline_api_events_emitted_total{type="com.order_created"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("MetricsHandler lacks %q", want)
		}
	}
}

// TestPublicListenerServesNoMetrics: the API's listener is the one behind
// the load balancer, whose path rule sees the raw path; Go's mux decodes
// /%6detrics to /metrics. Neither spelling may answer metrics there.
func TestPublicListenerServesNoMetrics(t *testing.T) {
	f := newFixture(t)
	f.mustOrder()
	for _, path := range []string{"/metrics", "/%6detrics", "/%6Detrics", "/metrics/", "//metrics"} {
		r := f.do(http.MethodGet, path, nil, nil)
		if r.Status == http.StatusOK || strings.Contains(string(r.Body), "bowline_api_requests_total") {
			t.Errorf("GET %s on the API listener = %d %.80q; want no metrics", path, r.Status, r.Body)
		}
	}
}
