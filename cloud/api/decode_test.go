package api

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// FuzzDecodeStrict: no body makes the strict decoder panic, recurse past
// maxDepth or allocate more than a small multiple of its length, and what
// it accepts encoding/json accepts too. The seeds include the 50 KB body of
// nested arrays that used to take 850 MB.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{"customer_id":"c1","pet_id":"p1","items":[{"sku":"TAG-001","qty":1}],"amount_cents":4999}`,
		`{"customer_id":"c1","pet_id":"p1","pet_id":"p2"}`,
		`{"Customer_ID":"c1"}`,
		`{"id":"evt_1","type":"payment.succeeded","data":{"payment_id":"p","order_id":"o","amount_cents":1,"currency":"USD"}}`,
		`{"TAG-001":{"amount_cents":4999,"currency":"USD"}}`,
		`{"items":` + strings.Repeat("[", 25_000) + strings.Repeat("]", 25_000) + `}`,
		`{"data":` + strings.Repeat(`{"a":`, 5_000) + `1` + strings.Repeat("}", 5_000) + `}`,
		strings.Repeat("[", 40),
		`{} {}`, ``, `"x"`, `{"items":[1,2,{"sku":{"a":[]}}]}`,
	} {
		f.Add([]byte(s))
	}
	targets := []func() any{
		func() any { return new(OrderRequest) },
		func() any { return new(PaymentWebhook) },
		func() any { return new(PaymentData) },
		func() any { return new(PriceList) },
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, target := range targets {
			v := target()
			var err error
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err = decodeStrict(body, v)
			runtime.ReadMemStats(&after)
			// Generous: a token costs a few allocations; a path, only on
			// error, is at most maxDepth steps.
			if n, limit := after.TotalAlloc-before.TotalAlloc, uint64(1<<20+256*len(body)); n > limit {
				t.Fatalf("decodeStrict(%d bytes into %T) allocated %d bytes; want at most %d", len(body), v, n, limit)
			}
			if err == nil {
				if jerr := json.Unmarshal(body, target()); jerr != nil {
					t.Fatalf("decodeStrict accepted %q into %T; encoding/json says %v", body, v, jerr)
				}
				if d := depth(body); d > maxDepth {
					t.Fatalf("decodeStrict accepted %q, nested %d deep; want at most %d", body, d, maxDepth)
				}
			}
		}
	})
}

// depth is how deeply body's arrays and objects nest (strings skipped).
func depth(body []byte) int {
	d, max, inString, escaped := 0, 0, false, false
	for _, c := range body {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			d++
			if d > max {
				max = d
			}
		case c == ']' || c == '}':
			d--
		}
	}
	return max
}
