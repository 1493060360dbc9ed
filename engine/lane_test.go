package engine_test

import (
	"errors"
	"testing"

	"github.com/bowline-iot/bowline/engine"
)

func TestSubscriptionMatches(t *testing.T) {
	tests := []struct {
		pattern, typ string
		want         bool
	}{
		{"bowl.*", "bowl.meal_finished", true},
		{"bowl.meal_finished", "bowl.meal_finished", true},
		{"bowl.meal_finish", "bowl.meal_finished", false}, // no wildcard: exact
		{"bowl.meal_finish*", "bowl.meal_finished", true},
		{"row.contact.*", "row.contact.modify", true},
		{"row.contact.*", "row.contactaddr.modify", false},
		{"row.*.insert", "row.order.insert", true},
		{"com.payment_?ompleted", "com.payment_completed", true},
		{"*", "bowl.empty", true},
		{"[", "bowl.empty", false}, // malformed glob matches nothing
	}
	for _, tt := range tests {
		s := engine.Subscription{Name: "s", Pattern: tt.pattern, Lane: engine.Durable}
		if got := s.Matches(tt.typ); got != tt.want {
			t.Errorf("Subscription{Pattern: %q}.Matches(%q) = %v; want %v", tt.pattern, tt.typ, got, tt.want)
		}
	}
}

func TestMatchFiltersByLane(t *testing.T) {
	subs := []engine.Subscription{
		{Name: "a", Pattern: "bowl.*", Lane: engine.Inline},
		{Name: "b", Pattern: "bowl.*", Lane: engine.Local},
		{Name: "c", Pattern: "bowl.empty", Lane: engine.Local},
		{Name: "d", Pattern: "com.*", Lane: engine.Local},
	}
	got := engine.Match(subs, engine.Local, "bowl.empty")
	if len(got) != 2 || got[0].Name != "b" || got[1].Name != "c" {
		t.Errorf("Match(LOCAL, bowl.empty) = %v; want [b c]", got)
	}
}

func TestValidTypeAndTenant(t *testing.T) {
	for typ, want := range map[string]bool{
		"bowl.meal_finished": true, "row.order.insert": true, "bowl": false, "Bowl.x": false,
		"bowl..x": false, "bowl.x ": false, "": false, "bowl.*": false,
	} {
		if got := engine.ValidType(typ); got != want {
			t.Errorf("ValidType(%q) = %v; want %v", typ, got, want)
		}
	}
	for tenant, want := range map[string]bool{
		"t1": true, "acme-co.uk": true, "a#b": false, "": false, "-x": false,
	} {
		if got := engine.ValidTenant(tenant); got != want {
			t.Errorf("ValidTenant(%q) = %v; want %v", tenant, got, want)
		}
	}
}

func testCatalog() engine.Catalog {
	return engine.Catalog{
		Types: []engine.EventType{
			{Name: "bowl.meal_finished"}, {Name: "bowl.refilled"},
			{Name: "com.payment_completed"}, {Name: "row.contact.modify"}, {Name: "bowl.empty"},
		},
		Producers: []engine.Producer{
			{Name: "ingest", Emits: []string{"bowl.meal_finished", "bowl.refilled", "bowl.empty"}},
			{Name: "api", Emits: []string{"com.payment_completed"}},
			{Name: "app-stream", Emits: []string{"row.contact.modify"}},
		},
		Subscriptions: []engine.Subscription{
			{Name: "record_intake", Pattern: "bowl.meal_finished", Lane: engine.Durable},
			{Name: "notify_buyer", Pattern: "com.payment_completed", Lane: engine.Durable},
			{Name: "contact_sync", Pattern: "row.contact.*", Lane: engine.BestEffort},
		},
	}
}

func TestCatalogCheck(t *testing.T) {
	if err := testCatalog().Check(); err != nil {
		t.Fatalf("Check() on a good catalog = %v; want nil", err)
	}
	tests := []struct {
		name   string
		break_ func(*engine.Catalog)
		want   error
	}{
		{"emitted type undeclared", func(c *engine.Catalog) {
			c.Producers[0].Emits = append(c.Producers[0].Emits, "bowl.food_low")
		}, engine.ErrUndeclaredEmit},
		{"declared type without producer", func(c *engine.Catalog) {
			c.Types = append(c.Types, engine.EventType{Name: "bowl.food_low"})
		}, engine.ErrNoProducer},
		{"glob without wildcard matches nothing", func(c *engine.Catalog) {
			c.Subscriptions[0].Pattern = "bowl.meal_finish"
		}, engine.ErrGlobMatchesNothing},
		{"row-change subscriber not on BEST_EFFORT", func(c *engine.Catalog) {
			c.Subscriptions[2].Lane = engine.Local
		}, engine.ErrWrongLane},
		{"domain subscriber on BEST_EFFORT", func(c *engine.Catalog) {
			c.Subscriptions[1].Lane = engine.BestEffort
		}, engine.ErrWrongLane},
		{"unknown lane", func(c *engine.Catalog) {
			c.Subscriptions[1].Lane = "SOMETIMES"
		}, engine.ErrBadDeclaration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testCatalog()
			tt.break_(&c)
			err := c.Check()
			if !errors.Is(err, tt.want) {
				t.Fatalf("Check() = %v; want an error matching %v", err, tt.want)
			}
			var ce *engine.ContractError
			if !errors.As(err, &ce) || ce.Subject == "" {
				t.Errorf("Check() = %v; want a *ContractError naming its subject", err)
			}
		})
	}
}
