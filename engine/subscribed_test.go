package engine_test

import (
	"slices"
	"testing"

	"github.com/bowline-iot/bowline/engine"
)

func TestSubscribedTypesAndEntities(t *testing.T) {
	c := engine.Catalog{
		Types: []engine.EventType{{Name: "a.read"}, {Name: "a.unread"}, {Name: "b.glob"}, {Name: "row.x.modify"}},
		Subscriptions: []engine.Subscription{
			{Name: "s1", Pattern: "a.read", Lane: engine.Durable},
			{Name: "s2", Pattern: "b.*", Lane: engine.Durable},
			{Name: "s3", Pattern: "row.X.modify", Lane: engine.BestEffort},
			{Name: "s4", Pattern: "row.y.*", Lane: engine.BestEffort},
		},
	}
	if got, want := c.SubscribedTypes(engine.Durable), []string{"a.read", "b.glob"}; !slices.Equal(got, want) {
		t.Errorf("SubscribedTypes(DURABLE) = %v; want %v", got, want)
	}
	if got, all := c.SubscribedEntities(); all || !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("SubscribedEntities() = %v, %v; want [x y], false", got, all)
	}
	c.Subscriptions = append(c.Subscriptions, engine.Subscription{Name: "s5", Pattern: "row.*", Lane: engine.BestEffort})
	if _, all := c.SubscribedEntities(); !all {
		t.Error("SubscribedEntities() with row.* = not all; want all (the entity is open)")
	}
}
