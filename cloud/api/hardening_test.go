package api_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/guard"
)

// TestRepeatedPaymentWithAnotherAmountIsRecorded: a repeat of the payment
// that paid an order is still 200 duplicate (the provider may stop
// retrying; nothing is emitted), but when its amount or currency differs
// from what was paid it is logged and counted as a mismatch.
func TestRepeatedPaymentWithAnotherAmountIsRecorded(t *testing.T) {
	m := newInmem(t, nil)
	m.db.setOrder(api.Order{ID: "01ORDER", Tenant: "tenant-a", AmountCents: 4999, Currency: "USD",
		Status: api.StatusPaid, PaymentID: "pay_1", Items: []api.Item{{SKU: "TAG-001", Qty: 1}}})
	hook := func(amount int64, currency string) response {
		body := webhookBody("evt_r", api.PaymentData{PaymentID: "pay_1", OrderID: "01ORDER", AmountCents: &amount, Currency: currency})
		return m.do(http.MethodPost, "/v1/webhooks/payments", map[string]string{api.SignatureHeader: sign(body)}, body)
	}
	if r := hook(4999, "USD"); r.Status != http.StatusOK || r.answer(t).Status != api.WebhookDuplicate {
		t.Fatalf("same payment again = %d %s; want 200 duplicate", r.Status, r.Body)
	}
	if strings.Contains(m.log.String(), "differs") || strings.Contains(m.metrics(), "bowline_api_payment_mismatches_total{") {
		t.Errorf("an exact repeat was recorded as a mismatch: log %q", m.log.String())
	}
	for _, tc := range []struct {
		amount   int64
		currency string
		reason   string
	}{{1, "USD", "duplicate_amount"}, {4999, "EUR", "duplicate_currency"}} {
		if r := hook(tc.amount, tc.currency); r.Status != http.StatusOK || r.answer(t).Status != api.WebhookDuplicate {
			t.Errorf("repeat of %d %s = %d %s; want 200 duplicate", tc.amount, tc.currency, r.Status, r.Body)
		}
		if want := `bowline_api_payment_mismatches_total{reason="` + tc.reason + `"} 1`; !strings.Contains(m.metrics(), want) {
			t.Errorf("after a repeat of %d %s, metrics lack %q", tc.amount, tc.currency, want)
		}
		if log := m.log.String(); !strings.Contains(log, "reason="+tc.reason) || !strings.Contains(log, "payment=pay_1") {
			t.Errorf("after a repeat of %d %s, log %q; want a warning with reason=%s and the payment", tc.amount, tc.currency, log, tc.reason)
		}
	}
}

// TestOrderIDsAreUnguessable: an order id's 80 random bits come from
// crypto/rand, fresh for every order. ulid.Make's monotonic source gave
// orders created in the same millisecond ids that differ only in their low
// bits: knowing one order id told the next.
func TestOrderIDsAreUnguessable(t *testing.T) {
	fixed := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	m := newInmem(t, func(c *api.Config) { c.Now = func() time.Time { return fixed } })
	seen := map[[5]byte]string{}
	for range 200 {
		r := m.do(http.MethodPost, "/v1/orders", map[string]string{"Authorization": "Bearer tok-inmem-0123456789"},
			[]byte(`{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1}]}`))
		if r.Status != http.StatusCreated {
			t.Fatalf("POST /v1/orders = %d %s; want 201", r.Status, r.Body)
		}
		id := r.order(t).ID
		u, err := ulid.ParseStrict(id)
		if err != nil {
			t.Fatalf("order id %q: %v; want a ULID", id, err)
		}
		var high [5]byte // the top 40 of the 80 random bits
		copy(high[:], u.Entropy())
		if prev, dup := seen[high]; dup {
			t.Fatalf("order ids %s and %s share their top 40 random bits; want independent random ids", prev, id)
		}
		seen[high] = id
	}
}

// TestTokenCheckTimeDoesNotDependOnTheTokenLength: a presented token is
// compared through its SHA-256 digest, so checking it against a configured
// token of its own length costs what checking it against a short one does.
// subtle.ConstantTimeCompare on the raw tokens returns at once when the
// lengths differ, which tells an attacker the length. The faster of many
// rounds is compared, so a loaded machine only slows both.
func TestTokenCheckTimeDoesNotDependOnTheTokenLength(t *testing.T) {
	const n = 256 << 10
	presented := strings.Repeat("a", n-1) + "b"
	// Hundreds of wrong tokens from one address: a guard that never locks
	// it out, or the answers would be 429s.
	patient := func(c *api.Config) {
		g, err := guard.New(guard.Config{Burst: 1 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		c.Guard = g
	}
	sameLength := newInmem(t, func(c *api.Config) {
		c.Tokens = map[string]string{strings.Repeat("a", n): "tenant-a"}
		c.OpsToken = strings.Repeat("a", n)
		patient(c)
	})
	short := newInmem(t, func(c *api.Config) {
		c.Tokens = map[string]string{strings.Repeat("a", 16): "tenant-a"}
		c.OpsToken = strings.Repeat("a", 16)
		patient(c)
	})
	for _, route := range []struct{ method, path string }{{http.MethodPost, "/v1/orders"}, {http.MethodGet, "/v1/ops/reconcile"}} {
		fastest := func(m *inmem) time.Duration {
			start := time.Now()
			for range 4 {
				if r := m.do(route.method, route.path, map[string]string{"Authorization": "Bearer " + presented}, nil); r.Status != http.StatusUnauthorized {
					t.Fatalf("%s %s with a wrong token = %d; want 401", route.method, route.path, r.Status)
				}
			}
			return time.Since(start)
		}
		best := [2]time.Duration{time.Hour, time.Hour}
		for range 25 {
			for i, m := range []*inmem{sameLength, short} {
				best[i] = min(best[i], fastest(m))
			}
		}
		ratio := float64(max(best[0], best[1])) / float64(min(best[0], best[1]))
		t.Logf("%s %s: %v against %v (x%.2f)", route.method, route.path, best[0], best[1], ratio)
		if ratio > 2 {
			t.Errorf("%s %s: a wrong token of the configured length takes %v, against a short configured token %v (x%.1f); want the same",
				route.method, route.path, best[0], best[1], ratio)
		}
	}
}

// TestShortSecretsAreRefusedAtStartup: `bowline api` (SettingsFromEnv)
// refuses a bearer token, ops token or webhook secret shorter than
// MinSecretLen, naming the variable and never printing the value; empty
// ones keep their meaning (no tokens, no ops token, "required" at New).
func TestShortSecretsAreRefusedAtStartup(t *testing.T) {
	long := "0123456789abcdef" // MinSecretLen bytes
	if len(long) != api.MinSecretLen {
		t.Fatalf("test value is %d bytes; want MinSecretLen %d", len(long), api.MinSecretLen)
	}
	ok := map[string]string{api.TokensEnv: long + "=tenant-a", api.OpsTokenEnv: long + "-ops", api.WebhookSecretEnv: long + "-hook"}
	set := func(env map[string]string) {
		for k, v := range env {
			t.Setenv(k, v)
		}
	}
	t.Setenv(api.PricesEnv, "")
	t.Setenv(api.AddrEnv, "")
	set(ok)
	if _, err := api.SettingsFromEnv(); err != nil {
		t.Fatalf("SettingsFromEnv with secrets of %d bytes = %v; want nil", api.MinSecretLen, err)
	}
	for _, tc := range []struct{ name, env, value, secret, want string }{
		{"one-character token", api.TokensEnv, "Z=tenant-a", "Z=", `token of tenant "tenant-a"`},
		{"short second token", api.TokensEnv, long + "=tenant-a,sh0rtTok=tenant-b", "sh0rtTok", `token of tenant "tenant-b"`},
		{"short ops token", api.OpsTokenEnv, "sh0rtOps", "sh0rtOps", api.OpsTokenEnv},
		{"webhook secret one byte short", api.WebhookSecretEnv, "sh0rtHook012345", "sh0rtHook", api.WebhookSecretEnv},
	} {
		set(ok)
		t.Setenv(tc.env, tc.value)
		_, err := api.SettingsFromEnv()
		if !errors.Is(err, api.ErrShortSecret) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.env) {
			t.Errorf("%s: SettingsFromEnv = %v; want ErrShortSecret naming %s and %s", tc.name, err, tc.env, tc.want)
			continue
		}
		if strings.Contains(err.Error(), tc.secret) {
			t.Errorf("%s: error %q prints the secret", tc.name, err)
		}
	}
	for _, env := range []string{api.TokensEnv, api.OpsTokenEnv, api.WebhookSecretEnv} {
		set(ok)
		t.Setenv(env, "")
		if _, err := api.SettingsFromEnv(); err != nil {
			t.Errorf("SettingsFromEnv with %s empty = %v; want nil", env, err)
		}
	}
}
