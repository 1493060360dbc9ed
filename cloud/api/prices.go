package api

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
)

// PricesEnv names the price list file `bowline api` reads instead of
// DefaultPrices.
const PricesEnv = "BOWLINE_PRICES"

// Price is what one unit of a SKU costs.
type Price struct {
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
}

// PriceList maps a SKU to its price. The server prices every order from
// it; a client never sets an order's amount or currency
// (docs/commerce.md, "Prices").
type PriceList map[string]Price

// DefaultPrices is the built-in catalog, used when no price list file is
// configured (the dev stack and the tests order TAG-001).
func DefaultPrices() PriceList {
	return PriceList{
		"TAG-001":  {AmountCents: 4999, Currency: "USD"},
		"BOWL-001": {AmountCents: 12999, Currency: "USD"},
		"FOOD-2KG": {AmountCents: 2599, Currency: "USD"},
	}
}

// Validate checks every SKU and price: a SKU by the API's rule, a positive
// amount below a million dollars, an ISO 4217 currency, and one currency
// for the whole list (an order has one currency).
func (p PriceList) Validate() error {
	if len(p) == 0 {
		return fmt.Errorf("price list: empty")
	}
	var currency string
	for _, sku := range slices.Sorted(maps.Keys(p)) {
		pr := p[sku]
		if err := checkSKU("price list sku", sku); err != nil {
			return err
		}
		if pr.AmountCents <= 0 || pr.AmountCents > 100_000_000 {
			return fmt.Errorf("price list sku %q: amount_cents %d: want 1 to 100000000", sku, pr.AmountCents)
		}
		if err := checkCurrency(fmt.Sprintf("price list sku %q: currency", sku), pr.Currency); err != nil {
			return err
		}
		if currency != "" && pr.Currency != currency {
			return fmt.Errorf("price list sku %q: currency %s; the list is in %s (one currency per list)", sku, pr.Currency, currency)
		}
		currency = pr.Currency
	}
	return nil
}

// total prices items; an error names the first line whose SKU is not in
// the list.
func (p PriceList) total(items []Item) (amount int64, currency string, err error) {
	for i, it := range items {
		pr, ok := p[it.SKU]
		if !ok {
			return 0, "", fmt.Errorf("items[%d].sku %q: not in the price list", i, it.SKU)
		}
		// Bounded: at most maxItems lines of maxQty units under 1e8 cents.
		if amount > math.MaxInt64-pr.AmountCents*int64(it.Qty) {
			return 0, "", fmt.Errorf("items: total too large")
		}
		amount += pr.AmountCents * int64(it.Qty)
		currency = pr.Currency
	}
	return amount, currency, nil
}

// maxPriceFile bounds a price list file, as MaxBodyBytes bounds a request
// body: ten thousand SKUs fit in well under a megabyte.
const maxPriceFile = 1 << 20

// LoadPrices reads a price list file of at most 1 MiB: a JSON object of SKU
// to {"amount_cents":N,"currency":"USD"}, decoded strictly and validated.
func LoadPrices(path string) (PriceList, error) {
	b, err := readFileMax(path, maxPriceFile)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", PricesEnv, path, err)
	}
	var p PriceList
	if err := decodeStrict(b, &p); err != nil {
		return nil, fmt.Errorf("%s %s: %w", PricesEnv, path, err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", PricesEnv, path, err)
	}
	return p, nil
}

// readFileMax reads the file at path, refusing one over max bytes.
func readFileMax(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("file exceeds %d bytes", max)
	}
	return b, nil
}
