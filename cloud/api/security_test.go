package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/catalog"
)

// TestServerPricesOrders: the client never sets the price. An order is
// priced from the price list; a client's amount_cents or currency that
// differs (0 included) is refused and commits nothing.
func TestServerPricesOrders(t *testing.T) {
	f := newFixture(t)
	r := f.order(f.tokenA, "", `{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":2},{"sku":"FOOD-2KG","qty":1}]}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("order without amount = %d %s; want 201", r.Status, r.Body)
	}
	if o := r.order(t); o.AmountCents != 2*4999+2599 || o.Currency != "USD" {
		t.Errorf("order amount %d %s; want %d USD from the price list", o.AmountCents, o.Currency, 2*4999+2599)
	}
	for body, words := range map[string]string{
		`{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1}],"amount_cents":0}`:                     "makes these items 49.99 USD; the request expected 0.00 USD in any currency",
		`{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1}],"amount_cents":1}`:                     "expected 0.01 USD in any currency",
		`{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1}],"amount_cents":4999,"currency":"EUR"}`: "expected 49.99 EUR",
	} {
		if r := f.order(f.tokenA, "", body); r.Status != http.StatusConflict || r.code(t) != api.CodePriceMismatch || !strings.Contains(string(r.Body), words) {
			t.Errorf("order %s = %d %s; want 409 %s saying %q", body, r.Status, r.Body, api.CodePriceMismatch, words)
		}
	}
	if n := len(f.events(f.tenantA)); n != 1 {
		t.Errorf("events = %d; want 1 (the priced order only)", n)
	}
}

// TestPaymentCurrencyMismatchIsRecordedNotPaid: the webhook checks the
// amount and the currency against the order; a mismatch is counted for
// operators and the order stays unpaid, with no com.payment_completed.
func TestPaymentCurrencyMismatchIsRecordedNotPaid(t *testing.T) {
	f := newFixture(t)
	id := f.mustOrder()
	amount := int64(4999)
	body := webhookBody("evt_eur", api.PaymentData{PaymentID: "pay_eur_" + randHex(3), OrderID: id, AmountCents: &amount, Currency: "EUR"})
	if r := f.webhook(body, sign(body)); r.Status != http.StatusUnprocessableEntity || r.code(t) != api.CodeCurrencyMismatch {
		t.Errorf("payment in EUR for a USD order = %d %s; want 422 %s", r.Status, r.Body, api.CodeCurrencyMismatch)
	}
	noCurrency := paymentBody(id, "pay_nocur", 4999)
	noCurrency = []byte(strings.Replace(string(noCurrency), `,"currency":"USD"`, "", 1))
	if r := f.webhook(noCurrency, sign(noCurrency)); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "data.currency") {
		t.Errorf("payment without currency = %d %s; want 400 naming data.currency", r.Status, r.Body)
	}
	if got := attr(f.orderRow(id), "status"); got != api.StatusPending {
		t.Errorf("order status after mismatched payments = %q; want %q", got, api.StatusPending)
	}
	if typ := types_(f.events(f.tenantA)); len(typ) != 2 || typ[1] != catalog.TypePaymentRefused {
		t.Errorf("events = %v; want com.order_created and one com.payment_refused", typ)
	}
	rec := httptest.NewRecorder()
	f.api.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `bowline_api_payment_mismatches_total{reason="currency"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %q", want)
	}
}

// TestRefusedPaymentIsRecordedOnItsOrder: a payment of another amount is
// refused with a message in currency units and leaves a
// com.payment_refused in the order's tenant's chain with both figures and
// the reason; the provider's retry of the same delivery is refused again
// but recorded once, and the order stays pending.
func TestRefusedPaymentIsRecordedOnItsOrder(t *testing.T) {
	f := newFixture(t)
	id := f.mustOrder()
	pay := "pay_short_" + randHex(3)
	body := paymentBody(id, pay, 4000)
	for try := range 2 {
		r := f.webhook(body, sign(body))
		if r.Status != http.StatusUnprocessableEntity || r.code(t) != api.CodeAmountMismatch {
			t.Fatalf("short payment (try %d) = %d %s; want 422 %s", try, r.Status, r.Body, api.CodeAmountMismatch)
		}
		msg := string(r.Body)
		if !strings.Contains(msg, "of 40.00 USD") || !strings.Contains(msg, "of 49.99 USD") || strings.Contains(msg, "4000 USD") {
			t.Errorf("refusal message = %q; want 40.00 USD and 49.99 USD, no bare cents", msg)
		}
	}
	evs := f.events(f.tenantA)
	if typ := types_(evs); len(typ) != 2 || typ[1] != catalog.TypePaymentRefused {
		t.Fatalf("events = %v; want com.order_created and one com.payment_refused (a retry records nothing new)", typ)
	}
	got := evs[1]
	want := map[string]any{"order_id": id, "payment_id": pay, "webhook_id": "evt_" + pay, "reason": "amount",
		"amount_cents": 4000.0, "currency": "USD", "order_amount_cents": 4999.0, "order_currency": "USD"}
	for k, v := range want {
		if got.Payload[k] != v {
			t.Errorf("payment_refused payload[%q] = %v; want %v", k, got.Payload[k], v)
		}
	}
	if got.Tenant != f.tenantA || got.CorrelationID != evs[0].CorrelationID {
		t.Errorf("payment_refused tenant %q correlation %q; want %q and the order's %q", got.Tenant, got.CorrelationID, f.tenantA, evs[0].CorrelationID)
	}
	if st := attr(f.orderRow(id), "status"); st != api.StatusPending {
		t.Errorf("order status after a refused payment = %q; want %q", st, api.StatusPending)
	}
}

// TestStrictJSON: unknown, duplicate and case-folded keys are refused with
// an error naming the field and no Go type name.
func TestStrictJSON(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ name, body, field string }{
		{"unknown field", `{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1}],"discount":100}`, "discount"},
		{"duplicate key", `{"customer_id":"c1","pet_id":"p1","pet_id":"p2","items":[{"sku":"TAG-001","qty":1}]}`, "pet_id"},
		{"duplicate nested key", `{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1,"qty":5}]}`, "items[0].qty"},
		{"case-folded key", `{"Customer_ID":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1}]}`, "Customer_ID"},
		{"unknown nested field", `{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1,"price":1}]}`, "items[0].price"},
		{"wrong type", `{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":"1"}]}`, "qty"},
		{"number too large", `{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1e30}]}`, "qty"},
		{"trailing data", `{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1}]} {}`, "more data"},
	} {
		r := f.order(f.tokenA, "", tc.body)
		msg := string(r.Body)
		if r.Status != http.StatusBadRequest || r.code(t) != api.CodeInvalidJSON || !strings.Contains(msg, tc.field) {
			t.Errorf("%s: POST /v1/orders = %d %s; want 400 %s naming %s", tc.name, r.Status, msg, api.CodeInvalidJSON, tc.field)
		}
		for _, goName := range []string{"int", "float64", "api.", "struct", "Go ", "json:"} {
			if strings.Contains(msg, goName) {
				t.Errorf("%s: error %s names a Go type (%q)", tc.name, msg, goName)
			}
		}
	}
	dup := paymentBody("01X", "pay_d", 1)
	dup = []byte(strings.Replace(string(dup), `"amount_cents":1,`, `"amount_cents":1,"amount_cents":4999,`, 1))
	if r := f.webhook(dup, sign(dup)); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "amount_cents") {
		t.Errorf("webhook with a duplicate amount_cents = %d %s; want 400 naming it", r.Status, r.Body)
	}
	if n := len(f.events(f.tenantA)); n != 0 {
		t.Errorf("events after refused bodies = %d; want 0", n)
	}
}

// TestFieldBounds: every id and text field has a maximum length and a
// character rule, so no DynamoDB key built from one (PET#<tenant>#<pet_id>,
// PAYMENT#<payment_id>, APIKEY#<tenant>#<key>) can reach DynamoDB's 2,048
// byte partition key or 1,024 byte sort key limit; a violation is 400
// naming the field and commits nothing.
func TestFieldBounds(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("p", 3000)
	order := func(customer, pet, sku string) string {
		b, err := json.Marshal(api.OrderRequest{CustomerID: customer, PetID: pet, Items: []api.Item{{SKU: sku, Qty: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct{ name, body, field string }{
		{"pet_id over the sort key limit", order("c1", long, "TAG-001"), "pet_id"},
		{"customer_id over 128 bytes", order(strings.Repeat("c", 129), "p1", "TAG-001"), "customer_id"},
		{"pet_id with a key separator", order("c1", "p#1", "TAG-001"), "pet_id"},
		{"customer_id with a control character", order("c\n1", "p1", "TAG-001"), "customer_id"},
		{"empty customer_id", order("", "p1", "TAG-001"), "customer_id"},
		{"sku over 64 bytes", order("c1", "p1", strings.Repeat("S", 65)), "items[0].sku"},
		{"qty over 99", `{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":100}]}`, "items[0].qty"},
	} {
		r := f.order(f.tokenA, "", tc.body)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), tc.field) {
			t.Errorf("%s: POST /v1/orders = %d %.200s; want 400 naming %s", tc.name, r.Status, r.Body, tc.field)
		}
	}
	if r := f.order(f.tokenA, strings.Repeat("k", 3000), orderBody); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), api.IdempotencyKeyHeader) {
		t.Errorf("Idempotency-Key of 3000 bytes = %d %.200s; want 400 naming it", r.Status, r.Body)
	}
	corr := map[string]string{"Authorization": "Bearer " + f.tokenA, api.CorrelationIDHeader: "corr;" + strings.Repeat("c", 200)}
	if r := f.do(http.MethodPost, "/v1/orders", corr, []byte(orderBody)); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), api.CorrelationIDHeader) {
		t.Errorf("X-Correlation-Id of 200 bytes = %d %.200s; want 400 naming it", r.Status, r.Body)
	}
	id := f.mustOrder()
	pay := func(orderID, paymentID string) []byte {
		amount := int64(4999)
		return webhookBody("evt_1", api.PaymentData{PaymentID: paymentID, OrderID: orderID, AmountCents: &amount, Currency: "USD"})
	}
	for _, tc := range []struct {
		name  string
		body  []byte
		field string
	}{
		{"payment_id over the partition key limit", pay(id, strings.Repeat("y", 3000)), "data.payment_id"},
		{"payment_id with a separator", pay(id, "pay#1"), "data.payment_id"},
		{"webhook id over 128 bytes", []byte(strings.Replace(string(pay(id, "pay_2")), "evt_1", strings.Repeat("e", 129), 1)), "webhook id"},
		{"order_id over 128 bytes", pay(strings.Repeat("o", 129), "pay_1"), "data.order_id"},
	} {
		if r := f.webhook(tc.body, sign(tc.body)); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), tc.field) {
			t.Errorf("%s: webhook = %d %.200s; want 400 naming %s", tc.name, r.Status, r.Body, tc.field)
		}
	}
	if typ := types_(f.events(f.tenantA)); len(typ) != 1 {
		t.Errorf("events = %v; want only the one valid order's", typ)
	}
}

// nested is a JSON value of depth arrays inside one another, 2*depth bytes.
func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// allocated returns the bytes the process allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDeeplyNestedBodyIsRefusedCheaply: a 50 KB order of arrays nested
// 25,000 deep used to take seconds and hundreds of megabytes (the strict
// decoder recursed per level and built the path string at every one); it
// is now 400 invalid_json naming the nesting, within a bounded allocation.
// The same decoder reads the webhook (after its signature) and its data.
func TestDeeplyNestedBodyIsRefusedCheaply(t *testing.T) {
	f := newFixture(t)
	const maxAlloc = 10 << 20 // generous: the refusal itself needs a few hundred KB
	body := `{"customer_id":"c1","pet_id":"p1","items":` + nested(25_000) + `}`
	if len(body) < 50_000 {
		t.Fatalf("body is %d bytes; want at least 50 KB", len(body))
	}
	var r response
	start := time.Now()
	n := allocated(func() { r = f.order(f.tokenA, "", body) })
	took := time.Since(start)
	if r.Status != http.StatusBadRequest || r.code(t) != api.CodeInvalidJSON || !strings.Contains(string(r.Body), "nested more than 32 levels") {
		t.Errorf("order nested 25,000 deep = %d %.300s; want 400 %s naming the nesting", r.Status, r.Body, api.CodeInvalidJSON)
	}
	if n > maxAlloc {
		t.Errorf("order nested 25,000 deep allocated %d MB; want under %d MB", n>>20, maxAlloc>>20)
	}
	if took > 2*time.Second {
		t.Errorf("order nested 25,000 deep took %v; want well under 2s", took)
	}
	t.Logf("50 KB nested order: %d KB allocated, %v", n>>10, took)

	for name, hook := range map[string]string{
		"webhook":      `{"id":"evt_n","type":"other","data":` + nested(25_000) + `}`,
		"webhook data": `{"id":"evt_n","type":"payment.succeeded","data":{"payment_id":` + nested(25_000) + `}}`,
	} {
		b := []byte(hook)
		n := allocated(func() { r = f.webhook(b, sign(b)) })
		if r.Status != http.StatusBadRequest || r.code(t) != api.CodeInvalidJSON || !strings.Contains(string(r.Body), "nested more than 32 levels") {
			t.Errorf("%s nested 25,000 deep = %d %.300s; want 400 %s naming the nesting", name, r.Status, r.Body, api.CodeInvalidJSON)
		}
		if n > maxAlloc {
			t.Errorf("%s nested 25,000 deep allocated %d MB; want under %d MB", name, n>>20, maxAlloc>>20)
		}
	}

	// 32 levels are still read (and then refused because a sku is not a
	// list), 33 are not.
	at := func(levels int) string { // the object, items, the item: 3 levels
		return `{"customer_id":"c1","pet_id":"p1","items":[{"sku":` + nested(levels-3) + `,"qty":1}]}`
	}
	if r := f.order(f.tokenA, "", at(32)); r.Status != http.StatusBadRequest || strings.Contains(string(r.Body), "nested") || !strings.Contains(string(r.Body), "sku") {
		t.Errorf("order with 32 levels = %d %s; want 400 naming sku, not the nesting", r.Status, r.Body)
	}
	if r := f.order(f.tokenA, "", at(33)); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "nested more than 32") {
		t.Errorf("order with 33 levels = %d %s; want 400 naming the nesting", r.Status, r.Body)
	}
	if n := len(f.events(f.tenantA)); n != 0 {
		t.Errorf("events after refused bodies = %d; want 0", n)
	}
}

// TestDeeplyNestedPriceFileIsRefused: the price list file goes through the
// same decoder.
func TestDeeplyNestedPriceFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(`{"TAG-001":`+nested(25_000)+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	n := allocated(func() { _, err = api.LoadPrices(path) })
	if err == nil || !strings.Contains(err.Error(), "nested more than 32 levels") {
		t.Errorf("LoadPrices(nested 25,000 deep) = %v; want an error naming the nesting", err)
	}
	if n > 10<<20 {
		t.Errorf("LoadPrices(nested 25,000 deep) allocated %d MB; want under 10 MB", n>>20)
	}
	big := `{"TAG-001":{"amount_cents":4999,"currency":"USD"}}` + strings.Repeat(" ", 1<<20)
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := api.LoadPrices(path); err == nil || !strings.Contains(err.Error(), "exceeds 1048576 bytes") {
		t.Errorf("LoadPrices(a file over 1 MiB) = %v; want an error naming the limit", err)
	}
}
