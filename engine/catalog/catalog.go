package catalog

import (
	"fmt"

	"github.com/bowline-iot/bowline/engine"
)

// Producers of Bowline events.
const (
	// ProducerIngest turns device events from MQTT into bowl.* events.
	ProducerIngest = "ingest"
	// ProducerAPI emits commerce events from the HTTP API.
	ProducerAPI = "api"
	// ProducerAppStream is the record-change relay from the app table stream.
	ProducerAppStream = "app-stream"
	// ProducerSubscribers is the cloud subscribers run by the worker
	// (record_intake emits pet.appetite_dropped).
	ProducerSubscribers = "subscribers"
)

// Entities whose app-table rows produce row.<entity>.<op> events.
var Entities = []string{"order", "device", "pet", "intake", "contact"}

// Bowline returns the catalog. Each call returns a fresh copy.
func Bowline() engine.Catalog {
	c := engine.Catalog{
		Types: []engine.EventType{
			{Name: "bowl.meal_finished", Fields: []string{"grams_eaten", "duration_s", "started_at", "pet_tag"}, Description: "a pet finished a meal"},
			{Name: "bowl.refilled", Fields: []string{"grams_added", "level_g"}, Description: "the bowl was refilled"},
			{Name: "bowl.food_low", Fields: []string{"level_g", "threshold_g"}, Description: "food fell below the threshold"},
			{Name: "bowl.empty", Description: "the bowl is empty"},
			{Name: "bowl.device_fault", Fields: []string{"code", "detail"}, Description: "the bowl reported a fault"},
			{Name: "bowl.telemetry_dropped", Fields: []string{"from_seq", "to_seq", "count", "from", "to", "reason"}, Description: "the gateway dropped unsent telemetry (disk cap or TTL)"},
			{Name: "bowl.data_gap", Fields: []string{"thing", "lane", "from_seq", "to_seq", "missing_since"}, Description: "a range of a thing's sequence numbers never arrived within the grace period"},
			{Name: "com.order_created", Fields: []string{"order_id", "customer_id", "pet_id", "items", "amount_cents"}, Description: "an order was placed"},
			{Name: "com.payment_completed", Fields: []string{"order_id", "payment_id", "amount_cents", "customer_id", "pet_id", "items"}, Description: "an order was paid"},
			{Name: "pet.appetite_dropped", Fields: []string{"pet_tag", "day", "grams", "average_g", "days"}, Description: "a pet ate under half its 7-day average in a day"},
		},
		Producers: []engine.Producer{
			{Name: ProducerIngest, Emits: []string{"bowl.meal_finished", "bowl.refilled", "bowl.food_low", "bowl.empty", "bowl.device_fault", "bowl.telemetry_dropped", "bowl.data_gap"}},
			{Name: ProducerAPI, Emits: []string{"com.order_created", "com.payment_completed"}},
			{Name: ProducerSubscribers, Emits: []string{"pet.appetite_dropped"}},
		},
		Subscriptions: []engine.Subscription{
			{Name: "shopify_mirror", Pattern: "com.payment_completed", Lane: engine.Durable},
			{Name: "book_shipment", Pattern: "com.payment_completed", Lane: engine.Durable},
			{Name: "notify_buyer", Pattern: "com.payment_completed", Lane: engine.Durable},
			{Name: "mark_tag_ordered", Pattern: "com.payment_completed", Lane: engine.Durable},
			{Name: "record_intake", Pattern: "bowl.meal_finished", Lane: engine.Durable},
			// notify_owner is one handler on three types; a subscription has
			// one glob, so it is declared once per type (inbox keys differ by
			// name, and each event matches exactly one of them).
			{Name: "notify_owner", Pattern: "bowl.food_low", Lane: engine.Durable},
			{Name: "notify_owner_empty", Pattern: "bowl.empty", Lane: engine.Durable},
			{Name: "notify_owner_appetite", Pattern: "pet.appetite_dropped", Lane: engine.Durable},
			{Name: "notify_support", Pattern: "bowl.device_fault", Lane: engine.Durable},
			{Name: "device_changes", Pattern: "row.device.*", Lane: engine.BestEffort},
			{Name: "contact_changes", Pattern: "row.contact.modify", Lane: engine.BestEffort},
		},
	}
	var rows []string
	for _, e := range Entities {
		for _, op := range []string{"insert", "modify", "remove"} {
			name := fmt.Sprintf("row.%s.%s", e, op)
			rows = append(rows, name)
			c.Types = append(c.Types, engine.EventType{Name: name, Description: fmt.Sprintf("an app-table %s row: %s", e, op)})
		}
	}
	c.Producers = append(c.Producers, engine.Producer{Name: ProducerAppStream, Emits: rows})
	return c
}

// Bind returns c with handlers attached to the named subscriptions. It fails,
// naming it, when a handler names no subscription in c, so a renamed
// subscription cannot silently lose its handler.
func Bind(c engine.Catalog, handlers map[string]engine.Handler) (engine.Catalog, error) {
	subs := append([]engine.Subscription(nil), c.Subscriptions...)
	for name, h := range handlers {
		found := false
		for i := range subs {
			if subs[i].Name == name {
				subs[i].Handler, found = h, true
			}
		}
		if !found {
			return engine.Catalog{}, fmt.Errorf("bind handler %q: no such subscription in the catalog", name)
		}
	}
	c.Subscriptions = subs
	return c, nil
}
