package catalog_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
)

func TestBowlineCatalogPassesCheck(t *testing.T) {
	if err := catalog.Bowline().Check(); err != nil {
		t.Fatalf("catalog.Bowline().Check() = %v; want nil", err)
	}
}

func TestPaymentFansOutToFourDurableSubscriptions(t *testing.T) {
	got := engine.Match(catalog.Bowline().Subscriptions, engine.Durable, "com.payment_completed")
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if want := "shopify_mirror,book_shipment,notify_buyer,mark_tag_ordered"; strings.Join(names, ",") != want {
		t.Errorf("DURABLE subscriptions of com.payment_completed = %v; want %s", names, want)
	}
}

func TestBind(t *testing.T) {
	h := func(context.Context, engine.Envelope) error { return nil }
	c, err := catalog.Bind(catalog.Bowline(), map[string]engine.Handler{"notify_buyer": h})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Subscriptions {
		if (s.Handler != nil) != (s.Name == "notify_buyer") {
			t.Errorf("after Bind, %s has handler %v; want only notify_buyer bound", s.Name, s.Handler != nil)
		}
	}
	if _, err := catalog.Bind(catalog.Bowline(), map[string]engine.Handler{"notify_buyr": h}); err == nil || !strings.Contains(err.Error(), "notify_buyr") {
		t.Errorf("Bind(unknown name) error = %v; want one naming notify_buyr", err)
	}
}

// Every event type a gateway publishes is declared, with ingest as its
// producer.
func TestDeviceEventTypesAreDeclared(t *testing.T) {
	c := catalog.Bowline()
	var ingest []string
	for _, p := range c.Producers {
		if p.Name == catalog.ProducerIngest {
			ingest = p.Emits
		}
	}
	for _, typ := range wire.EventTypes {
		if !slices.ContainsFunc(c.Types, func(e engine.EventType) bool { return e.Name == typ }) || !slices.Contains(ingest, typ) {
			t.Errorf("device event type %s: declared %t, produced by ingest %t; want both", typ,
				slices.ContainsFunc(c.Types, func(e engine.EventType) bool { return e.Name == typ }), slices.Contains(ingest, typ))
		}
	}
}

// The pipes carry only what is read: the event types with a DURABLE
// subscriber and the contact rows, not ingest's seq and lease rows.
func TestBowlinePipes(t *testing.T) {
	events, rc, err := catalog.Pipes(catalog.Bowline())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{catalog.TypeMealFinished, catalog.TypeFoodLow, catalog.TypeEmpty, catalog.TypeDeviceFault, catalog.TypePaymentCompleted, catalog.TypeAppetiteDropped}
	slices.Sort(want)
	if got := catalog.Bowline().SubscribedTypes(engine.Durable); !slices.Equal(got, want) {
		t.Errorf("DURABLE subscribed types = %v; want %v", got, want)
	}
	if len(events.Filters) != 1 || !strings.Contains(events.Filters[0], `"type":{"S":["bowl.device_fault",`) {
		t.Errorf("events pipe filters = %q; want one naming the subscribed types", events.Filters)
	}
	if len(rc.Filters) != 3 || !strings.Contains(rc.Filters[0], "contact") || strings.Contains(strings.Join(rc.Filters, ""), "ingest") {
		t.Errorf("record-changes pipe filters = %q; want three for contact", rc.Filters)
	}
}

func TestPaymentRefusedHasNoSubscription(t *testing.T) {
	for _, lane := range []engine.Lane{engine.Inline, engine.Local, engine.Durable, engine.BestEffort} {
		if got := engine.Match(catalog.Bowline().Subscriptions, lane, catalog.TypePaymentRefused); len(got) != 0 {
			t.Errorf("%v subscriptions of %s = %v; want none (a record for operators)", lane, catalog.TypePaymentRefused, got)
		}
	}
}

func TestMoneyInItsCurrency(t *testing.T) {
	for _, tc := range []struct {
		minor int64
		code  string
		want  string
	}{
		{4999, "USD", "49.99 USD"},
		{4000, "USD", "40.00 USD"},
		{5, "EUR", "0.05 EUR"},
		{123456789, "USD", "1,234,567.89 USD"},
		{-250, "USD", "-2.50 USD"},
		{1200, "JPY", "1,200 JPY"},
		{1234, "KWD", "1.234 KWD"},
		{4999, "", "4,999 minor units (no currency)"},
		{4999, "QQQ", "4,999 minor units of QQQ"},
	} {
		if got := catalog.Money(tc.minor, tc.code); got != tc.want {
			t.Errorf("Money(%d, %q) = %q; want %q", tc.minor, tc.code, got, tc.want)
		}
	}
}
