package catalog

import (
	"fmt"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
)

// Event types. The device event types are the ones gateways publish, so the
// MQTT contract (edge/wire) defines them; ingest emits them as they arrive.
// The rest are emitted by cloud components (bowl.data_gap by ingest itself).
const (
	TypeMealFinished     = wire.TypeMealFinished
	TypeRefilled         = wire.TypeRefilled
	TypeFoodLow          = wire.TypeFoodLow
	TypeEmpty            = wire.TypeEmpty
	TypeDeviceFault      = wire.TypeDeviceFault
	TypeTelemetryDropped = wire.TypeTelemetryDropped
	TypeCounterReset     = wire.TypeCounterReset
	TypeDataGap          = "bowl.data_gap"
	TypeOrderCreated     = "com.order_created"
	TypePaymentCompleted = "com.payment_completed"
	TypePaymentRefused   = "com.payment_refused"
	TypeAppetiteDropped  = "pet.appetite_dropped"
	// TypeCompletenessStated anchors a tenant's day of telemetry in its
	// chain: per bowl the completeness counts and a digest
	// (docs/completeness.md), once per tenant and UTC day.
	TypeCompletenessStated = "audit.completeness_stated"
)

// Subscriptions, by name (the inbox key and the handler binding).
const (
	SubShopifyMirror       = "shopify_mirror"
	SubBookShipment        = "book_shipment"
	SubNotifyBuyer         = "notify_buyer"
	SubMarkTagOrdered      = "mark_tag_ordered"
	SubRecordIntake        = "record_intake"
	SubNotifyOwner         = "notify_owner"
	SubNotifyOwnerEmpty    = "notify_owner_empty"
	SubNotifyOwnerAppetite = "notify_owner_appetite"
	SubNotifySupport       = "notify_support"
	SubContactChanges      = "contact_changes"
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
	// ProducerCompleteness is `bowline completeness anchor`, the daily
	// job that states each tenant's day (docs/completeness.md).
	ProducerCompleteness = "completeness"
)

// Entities whose app-table rows produce row.<entity>.<op> events.
var Entities = []string{"order", "device", "pet", "intake", "contact"}

// Bowline returns the catalog. Each call returns a fresh copy.
func Bowline() engine.Catalog {
	c := engine.Catalog{
		Types: []engine.EventType{
			{Name: TypeMealFinished, Fields: []string{"grams_eaten", "duration_s", "started_at", "pet_tag"}, Description: "a pet finished a meal"},
			{Name: TypeRefilled, Fields: []string{"grams_added", "level_g"}, Description: "the bowl was refilled"},
			{Name: TypeFoodLow, Fields: []string{"level_g", "threshold_g"}, Description: "food fell below the threshold"},
			{Name: TypeEmpty, Description: "the bowl is empty"},
			{Name: TypeDeviceFault, Fields: []string{"code", "detail"}, Description: "the bowl reported a fault"},
			{Name: TypeTelemetryDropped, Fields: []string{"from_seq", "to_seq", "count", "from", "to", "reason"}, Description: "the gateway dropped unsent telemetry (disk cap or TTL)"},
			{Name: TypeCounterReset, Fields: []string{"old_epoch", "new_epoch", "last_seq", "first_seq"}, Description: "the bowl's MCU restarted its sequence counter (new boot epoch); the new readings are kept"},
			{Name: TypeDataGap, Fields: []string{"thing", "lane", "outbox", "from_seq", "to_seq", "missing_since"}, Description: "a range of a thing's sequence numbers never arrived within the grace period"},
			{Name: TypeOrderCreated, Fields: []string{"order_id", "customer_id", "pet_id", "items", "amount_cents", "currency"}, Description: "an order was placed"},
			{Name: TypePaymentCompleted, Fields: []string{"order_id", "payment_id", "amount_cents", "currency", "customer_id", "pet_id", "items"}, Description: "an order was paid"},
			// No subscription: the record is for operators (the console shows
			// it on its order); the order stays pending_payment.
			{Name: TypePaymentRefused, Fields: []string{"order_id", "payment_id", "webhook_id", "reason", "amount_cents", "currency", "order_amount_cents", "order_currency"}, Description: "a signed payment did not match its order (reason amount or currency) and did not pay it"},
			{Name: TypeAppetiteDropped, Fields: []string{"pet_tag", "day", "grams", "average_g", "days"}, Description: "a pet ate under half its 7-day average in a day"},
			{Name: TypeCompletenessStated, Fields: []string{"day", "things", "digest"}, Description: "a tenant's day of telemetry accounted for, per bowl: assigned, durable, dropped, missing, duplicates, and a digest"},
		},
		Producers: []engine.Producer{
			{Name: ProducerIngest, Emits: []string{TypeMealFinished, TypeRefilled, TypeFoodLow, TypeEmpty, TypeDeviceFault, TypeTelemetryDropped, TypeCounterReset, TypeDataGap}},
			{Name: ProducerAPI, Emits: []string{TypeOrderCreated, TypePaymentCompleted, TypePaymentRefused}},
			{Name: ProducerSubscribers, Emits: []string{TypeAppetiteDropped}},
			{Name: ProducerCompleteness, Emits: []string{TypeCompletenessStated}},
		},
		Subscriptions: []engine.Subscription{
			{Name: SubShopifyMirror, Pattern: TypePaymentCompleted, Lane: engine.Durable},
			{Name: SubBookShipment, Pattern: TypePaymentCompleted, Lane: engine.Durable},
			{Name: SubNotifyBuyer, Pattern: TypePaymentCompleted, Lane: engine.Durable},
			{Name: SubMarkTagOrdered, Pattern: TypePaymentCompleted, Lane: engine.Durable},
			{Name: SubRecordIntake, Pattern: TypeMealFinished, Lane: engine.Durable},
			// notify_owner is one handler on three types; a subscription has
			// one glob, so it is declared once per type (inbox keys differ by
			// name, and each event matches exactly one of them).
			{Name: SubNotifyOwner, Pattern: TypeFoodLow, Lane: engine.Durable},
			{Name: SubNotifyOwnerEmpty, Pattern: TypeEmpty, Lane: engine.Durable},
			{Name: SubNotifyOwnerAppetite, Pattern: TypeAppetiteDropped, Lane: engine.Durable},
			{Name: SubNotifySupport, Pattern: TypeDeviceFault, Lane: engine.Durable},
			{Name: SubContactChanges, Pattern: "row.contact.modify", Lane: engine.BestEffort},
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
