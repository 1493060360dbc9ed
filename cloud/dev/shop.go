package dev

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/cloud/fakes"
)

// The demo shop: with Config.ShopOrdersPerHour set, `bowline dev` places
// orders by itself, a few per simulated hour, each paid at once through the
// signed payment webhook (the API's own path, as a payment provider would
// call it), so the Commerce and Dead letters pages and the providers have
// something to show. A ShopFailRate share of the orders meets a provider
// that refuses its call (400, terminal): that delivery is dead-lettered at
// once, to be redriven from the console or `bowline redrive`.

// shopFailStatus is what a failing provider answers: terminal, so the
// delivery goes to the dead letters at once rather than after retries.
const shopFailStatus = http.StatusBadRequest

// shopPrice is the price of one TAG-001 in the API's built-in price list
// (docs/commerce.md); with BOWLINE_PRICES changing it, the demo's orders
// are refused (price_mismatch) and logged.
const shopPrice = 4999

// shopPlan says which orders fail: order n (from 1) fails when the running
// share n x rate crosses a whole number, counted from one half, so the
// first failure comes early (rate 0.25: orders 2, 6, 10, ...).
func shopPlan(n int, rate float64) bool {
	if rate <= 0 {
		return false
	}
	return math.Floor(float64(n)*rate+0.5) > math.Floor(float64(n-1)*rate+0.5)
}

// shopProvider is the fake that fails for failing order k (from 0): they
// take turns.
func shopProvider(set *fakes.Set, k int) (string, *fakes.Fake) {
	all := []struct {
		name string
		f    *fakes.Fake
	}{{"shopify", set.Shopify}, {"shipping", set.Shipping}, {"notify", set.Notify}}
	p := all[k%len(all)]
	return p.name, p.f
}

// runShop places orders until ctx ends.
func (s *System) runShop(ctx context.Context) error {
	cfg := &s.cfg
	every := time.Duration(float64(time.Hour) / cfg.ShopOrdersPerHour / cfg.Speed)
	tokens := make([]string, 0, len(cfg.Settings.Tokens))
	for tok := range cfg.Settings.Tokens {
		tokens = append(tokens, tok)
	}
	slices.Sort(tokens)
	if len(tokens) == 0 {
		return nil
	}
	log := cfg.Logger.With("part", "shop")
	t := time.NewTicker(every)
	defer t.Stop()
	failed := 0
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		tok := tokens[n%len(tokens)]
		c := &Client{URL: s.apiURL, Token: tok, Secret: cfg.Settings.WebhookSecret}
		order, err := c.Order(ctx, fmt.Sprintf("cust-%03d", n%50), fmt.Sprintf("pet-%03d", n%50), shopPrice)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Warn("demo order not placed", "tenant", cfg.Settings.Tokens[tok], "err", err)
			continue
		}
		if shopPlan(n, cfg.ShopFailRate) {
			name, f := shopProvider(s.fakes.Set, failed)
			failed++
			f.FailNext(1, shopFailStatus)
			log.Info("demo order meets a failing provider", "order", order, "provider", name, "status", shopFailStatus)
		}
		status, ev, err := c.Payment(ctx, order, "pay_demo_"+ulid.Make().String(), shopPrice)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Warn("demo order not paid", "order", order, "err", err)
			continue
		}
		log.Info("demo order paid", "tenant", cfg.Settings.Tokens[tok], "order", order, "event", ev, "status", status)
	}
}
