package api

import (
	"fmt"
)

// Bounds of the text the API accepts (docs/commerce.md, "Field rules").
// Every id may end up in a DynamoDB key (PAYMENT#<payment_id>,
// PET#<tenant>#<pet_id>, customer:<customer_id>), and DynamoDB refuses a
// partition key over 2,048 bytes and a sort key over 1,024 bytes: 128 bytes
// of id plus a prefix and a tenant (at most 128) stays far below both.
const (
	maxIDLen    = 128 // customer_id, pet_id, payment_id, order_id, webhook id
	maxSKULen   = 64
	maxTypeLen  = 64 // a webhook's type
	maxQty      = 99
	idRule      = "1-128 ASCII letters, digits, '_', '.', ':', '@' or '-', starting with a letter or digit"
	skuRule     = "1-64 ASCII letters, digits, '_', '.' or '-', starting with a letter or digit"
	currencyLen = 3
)

// checkID returns an error naming field when v is not 1 to max bytes of
// ASCII letters, digits and extra, starting with a letter or digit.
func checkID(field, v string, max int, extra, rule string) error {
	switch {
	case v == "":
		return fmt.Errorf("%s: required (%s)", field, rule)
	case len(v) > max:
		return fmt.Errorf("%s: %d bytes; at most %d (%s)", field, len(v), max, rule)
	case !alnum(v[0]):
		return fmt.Errorf("%s: must start with a letter or digit (%s)", field, rule)
	}
	for i := 1; i < len(v); i++ {
		if c := v[i]; !alnum(c) && !containsByte(extra, c) {
			return fmt.Errorf("%s: character %q at byte %d is not allowed (%s)", field, rune(c), i, rule)
		}
	}
	return nil
}

func checkIDField(field, v string) error { return checkID(field, v, maxIDLen, "_.:@-", idRule) }

func checkSKU(field, v string) error { return checkID(field, v, maxSKULen, "_.-", skuRule) }

// checkCurrency wants an ISO 4217 code: three upper-case ASCII letters.
func checkCurrency(field, v string) error {
	if len(v) != currencyLen {
		return fmt.Errorf("%s %q: want a three-letter ISO 4217 code such as \"USD\"", field, v)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 'A' || v[i] > 'Z' {
			return fmt.Errorf("%s %q: want three upper-case letters (ISO 4217)", field, v)
		}
	}
	return nil
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}
