package catalog

import (
	"strconv"
	"strings"

	"golang.org/x/text/currency"
)

// Money says an amount the commerce events carry (amount_cents, in the
// currency's minor unit, and an ISO 4217 currency) in that currency's
// units: Money(4999, "USD") is "49.99 USD", Money(1200, "JPY") is
// "1,200 JPY" (the yen has no minor unit). The scale is the currency's
// standard one from CLDR (golang.org/x/text/currency). An amount with no
// currency, or one the data does not know, is said in minor units, so a
// figure is never shown as if it were whole units.
func Money(minor int64, code string) string {
	if code == "" {
		return groupDigits(minor) + " minor units (no currency)"
	}
	unit, err := currency.ParseISO(code)
	if err != nil {
		return groupDigits(minor) + " minor units of " + code
	}
	scale, _ := currency.Standard.Rounding(unit)
	if scale == 0 {
		return groupDigits(minor) + " " + code
	}
	sign, abs := "", minor
	if minor < 0 {
		sign, abs = "-", -minor
	}
	div := int64(1)
	for range scale {
		div *= 10
	}
	frac := strconv.FormatInt(abs%div, 10)
	frac = strings.Repeat("0", scale-len(frac)) + frac
	return sign + groupDigits(abs/div) + "." + frac + " " + code
}

// groupDigits writes n with a comma between each group of three digits.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
