package catalog

import (
	"strconv"
	"strings"

	"golang.org/x/text/currency"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
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

// digits groups n's digits in threes with commas (CLDR's English
// pattern, golang.org/x/text/message), as the console writes counts.
var digits = message.NewPrinter(language.English)

// groupDigits writes n with a comma between each group of three digits.
func groupDigits(n int64) string { return digits.Sprintf("%d", n) }
