package catalog

import (
	"fmt"
	"reflect"
	"strings"

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

// declaration is one event type as Bowline declares it.
type declaration struct {
	name string
	// payload is a zero value of the event's payload type; the type's
	// Fields are derived from it (FieldsOf).
	payload     any
	description string
}

// declarations are Bowline's event types but the row.* record changes,
// whose payload is the engine's (Rows).
var declarations = []declaration{
	{name: TypeMealFinished, payload: MealFinished{}, description: "a pet finished a meal"},
	{name: TypeRefilled, payload: Refilled{}, description: "the bowl was refilled"},
	{name: TypeFoodLow, payload: FoodLow{}, description: "food fell below the threshold"},
	{name: TypeEmpty, payload: Empty{}, description: "the bowl is empty"},
	{name: TypeDeviceFault, payload: DeviceFault{}, description: "the bowl reported a fault"},
	{name: TypeTelemetryDropped, payload: TelemetryDropped{}, description: "the gateway dropped unsent telemetry (disk cap or TTL)"},
	{name: TypeCounterReset, payload: CounterReset{}, description: "the bowl's MCU restarted its sequence counter (new boot epoch); the new readings are kept"},
	{name: TypeDataGap, payload: DataGap{}, description: "a range of a thing's sequence numbers never arrived within the grace period: lane events from ingest, lane telemetry from the telemetry consumer (cloud/durable)"},
	{name: TypeOrderCreated, payload: OrderCreated{}, description: "an order was placed"},
	{name: TypePaymentCompleted, payload: PaymentCompleted{}, description: "an order was paid"},
	// No subscription: the record is for operators (the console shows it
	// on its order); the order stays pending_payment.
	{name: TypePaymentRefused, payload: PaymentRefused{}, description: "a signed payment did not match its order (reason amount or currency) and did not pay it; no subscription"},
	{name: TypeAppetiteDropped, payload: AppetiteDropped{}, description: "a pet ate under half its 7-day average in a day (record_intake)"},
	{name: TypeCompletenessStated, payload: CompletenessStated{}, description: "a tenant's day of telemetry accounted for, per bowl: assigned, durable, dropped, missing, duplicates, and a digest; once per tenant and day"},
}

// Bowline returns the catalog. Each call returns a fresh copy.
func Bowline() engine.Catalog {
	c := engine.Catalog{
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
	for _, d := range declarations {
		fields := FieldNames(FieldsOf(reflect.TypeOf(d.payload)))
		c.Types = append(c.Types, engine.EventType{Name: d.name, Fields: fields, Description: d.description})
	}
	rows := Rows()
	for _, name := range rows {
		entity, op := rowParts(name)
		c.Types = append(c.Types, engine.EventType{Name: name, Description: fmt.Sprintf("an app-table %s row: %s", entity, op)})
	}
	c.Producers = append(c.Producers, engine.Producer{Name: ProducerAppStream, Emits: rows})
	return c
}

// rowOps are the operations of a record change.
var rowOps = []string{"insert", "modify", "remove"}

// Rows returns the record-change types, row.<entity>.<op> for every entity
// of Entities. Their payload is the engine's, not a Bowline type: the
// changed row's images as plain JSON, "keys", "new" and "old"
// (engine/recordchange), whatever the app table holds.
func Rows() []string {
	var rows []string
	for _, e := range Entities {
		for _, op := range rowOps {
			rows = append(rows, "row."+e+"."+op)
		}
	}
	return rows
}

// rowParts splits row.<entity>.<op>.
func rowParts(name string) (entity, op string) {
	rest := strings.TrimPrefix(name, "row.")
	i := strings.LastIndexByte(rest, '.')
	return rest[:i], rest[i+1:]
}

// PayloadType returns the payload type declared for event type typ; ok is
// false for an undeclared type, a row.* type (the engine's images) and a
// device type whose payload type is not yet plugged in.
func PayloadType(typ string) (t reflect.Type, ok bool) {
	for _, d := range declarations {
		if d.name == typ && d.payload != nil {
			return reflect.TypeOf(d.payload), true
		}
	}
	return nil, false
}

// Decode returns env's payload as T. It fails, naming the event, when T is
// not the payload type the catalog declares for env.Type (a consumer bound
// to the wrong type) or when the payload does not decode into it.
func Decode[T any](env engine.Envelope) (T, error) {
	var p T
	want, ok := PayloadType(env.Type)
	if got := reflect.TypeFor[T](); !ok || got != want {
		return p, fmt.Errorf("decode event %s: %w", env.ID, &PayloadMismatchError{Type: env.Type, Want: want, Got: got})
	}
	if err := env.DecodePayload(&p); err != nil {
		return p, fmt.Errorf("decode %s: %w", env.Type, err)
	}
	return p, nil
}

// PayloadMismatchError is returned by Decode for a type whose declared
// payload type is not the one asked for (Want is nil when the type
// declares none).
type PayloadMismatchError struct {
	Type      string
	Want, Got reflect.Type
}

func (e *PayloadMismatchError) Error() string {
	if e.Want == nil {
		return fmt.Sprintf("%s declares no payload type; asked for %v", e.Type, e.Got)
	}
	return fmt.Sprintf("%s carries %v; asked for %v", e.Type, e.Want, e.Got)
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
