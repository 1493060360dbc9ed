package catalog_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
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

// Every declared type has a payload type, so its Fields are derived and its
// producers and consumers share one Go type. Exempt: the row.* record
// changes, whose payload is the engine's images of an app-table row
// (catalog.Rows).
func TestEveryTypeHasAPayloadType(t *testing.T) {
	for _, typ := range catalog.Bowline().Types {
		_, ok := catalog.PayloadType(typ.Name)
		switch {
		case strings.HasPrefix(typ.Name, "row."):
			if ok || len(typ.Fields) != 0 {
				t.Errorf("%s: payload type %t, fields %v; want neither (the engine's row images)", typ.Name, ok, typ.Fields)
			}
		case !ok:
			t.Errorf("%s declares no payload type; give its declaration a payload", typ.Name)
		}
	}
	if got, want := len(catalog.Rows()), 3*len(catalog.Entities); got != want {
		t.Errorf("len(Rows()) = %d; want %d", got, want)
	}
}

// Fields are the payload type's json names, in declaration order.
func TestFieldsAreDerivedFromThePayloadType(t *testing.T) {
	for _, typ := range catalog.Bowline().Types {
		pt, ok := catalog.PayloadType(typ.Name)
		if !ok {
			continue
		}
		if got, want := typ.Fields, catalog.FieldNames(catalog.FieldsOf(pt)); !slices.Equal(got, want) {
			t.Errorf("%s Fields = %v; want %v (from %v)", typ.Name, got, want, pt)
		}
	}
	// The Fields of today's chains, unchanged by the move to types.
	for typ, want := range map[string]string{
		catalog.TypeOrderCreated:       "order_id customer_id pet_id items amount_cents currency",
		catalog.TypePaymentCompleted:   "order_id payment_id amount_cents currency customer_id pet_id items",
		catalog.TypePaymentRefused:     "order_id payment_id webhook_id reason amount_cents currency order_amount_cents order_currency",
		catalog.TypeAppetiteDropped:    "pet_tag day grams average_g days",
		catalog.TypeDataGap:            "thing lane outbox from_seq to_seq missing_since",
		catalog.TypeCompletenessStated: "day things digest part parts",
	} {
		i := slices.IndexFunc(catalog.Bowline().Types, func(e engine.EventType) bool { return e.Name == typ })
		if i < 0 {
			t.Errorf("%s is not declared", typ)
			continue
		}
		if got := strings.Join(catalog.Bowline().Types[i].Fields, " "); got != want {
			t.Errorf("%s Fields = %s; want %s", typ, got, want)
		}
	}
}

func TestFieldsOf(t *testing.T) {
	type inner struct {
		A string `json:"a"`
	}
	type Embedded struct {
		E int `json:"e"`
	}
	type payload struct {
		Embedded
		Name     string `json:"name"`
		Opt      string `json:"opt,omitempty"`
		Zero     int    `json:"zero,omitzero"`
		Skip     string `json:"-"`
		Untagged int
		List     []inner           `json:"list"`
		ByKey    map[string]*inner `json:"by_key"`
		hidden   string
	}
	_ = payload{}.hidden
	got := catalog.FieldsOf(reflect.TypeFor[*payload]())
	want := []catalog.Field{
		{Name: "e"}, {Name: "name"}, {Name: "opt", Optional: true}, {Name: "zero", Optional: true}, {Name: "Untagged"},
		{Name: "list", Each: []catalog.Field{{Name: "a"}}}, {Name: "by_key", Each: []catalog.Field{{Name: "a"}}, Map: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FieldsOf(payload) = %+v; want %+v", got, want)
	}
}

// Markers around the generated part of docs/contract.md's "Event catalog".
const (
	docBegin = "<!-- begin: bowline catalog --markdown -->\n"
	docEnd   = "<!-- end: bowline catalog --markdown -->\n"
)

// docs/contract.md's event tables are `bowline catalog --markdown`: the
// text between the markers equals catalog.WriteMarkdown's.
func TestContractDocMatchesCatalog(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), docBegin)
	section, _, ok2 := strings.Cut(rest, docEnd)
	if !ok || !ok2 {
		t.Fatalf("docs/contract.md has no section between %q and %q", docBegin, docEnd)
	}
	var want strings.Builder
	if err := catalog.WriteMarkdown(&want, catalog.Bowline()); err != nil {
		t.Fatal(err)
	}
	if section != want.String() {
		t.Errorf("docs/contract.md's event catalog differs from `bowline catalog --markdown`; replace the section between the markers with:\n%s", want.String())
	}
}
