package catalog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
)

// chained are payloads as their producers wrote them before the payload
// types existed (map literals in cloud/api and cloud/subscribers, the
// structs of cloud/ingest, cloud/durable and cloud/completeness): events
// in today's chains. Every payload type needs one.
var chained = []struct {
	name, typ, json string
}{
	{"order", catalog.TypeOrderCreated, `{"amount_cents":4999,"currency":"USD","customer_id":"cust-1","items":[{"qty":2,"sku":"TAG-001"}],"order_id":"01JQ7Z8Y9X0W1V2U3T4S5R6Q7P","pet_id":"pet-1"}`},
	{"payment", catalog.TypePaymentCompleted, `{"amount_cents":4999,"currency":"USD","customer_id":"cust-1","items":[{"qty":1,"sku":"TAG-001"},{"qty":3,"sku":"FOOD-2KG"}],"order_id":"01JQ7Z8Y9X0W1V2U3T4S5R6Q7P","payment_id":"pay_1","pet_id":"pet-1"}`},
	// An order written before orders had a currency, with no stored lines.
	{"payment of an old order", catalog.TypePaymentCompleted, `{"amount_cents":0,"currency":"","customer_id":"cust-1","items":null,"order_id":"o-1","payment_id":"pay_2","pet_id":""}`},
	{"refusal", catalog.TypePaymentRefused, `{"amount_cents":100,"currency":"EUR","order_amount_cents":4999,"order_currency":"USD","order_id":"o-1","payment_id":"pay_3","reason":"currency","webhook_id":"evt_9"}`},
	{"appetite", catalog.TypeAppetiteDropped, `{"average_g":100,"day":"2026-03-09","days":7,"grams":30,"pet_tag":"p1"}`},
	{"appetite, fractions", catalog.TypeAppetiteDropped, `{"average_g":87.3,"day":"2026-03-09","days":3,"grams":12.5,"pet_tag":"p1"}`},
	// ingest's events-lane gap has no outbox; the consumer's always has one.
	{"gap from ingest", catalog.TypeDataGap, `{"from_seq":10,"lane":"events","missing_since":"2026-03-09T07:00:00.123456789Z","thing":"gw-1:a","to_seq":19}`},
	{"gap from the consumer", catalog.TypeDataGap, `{"from_seq":11,"lane":"telemetry","missing_since":"2026-03-09T07:01:00Z","outbox":"v1","thing":"gw-1:a","to_seq":19}`},
	// Device events: the gateway's data and what ingest adds (eventPayload).
	{"meal", catalog.TypeMealFinished, `{"device_at":"2026-03-09T07:00:00.5Z","device_event_id":"gw-1:a:meal:42.0","device_seq":42,"duration_s":312.5,"grams_eaten":41.2,"pet_tag":"p1","started_at":"2026-03-09T06:55:00Z","thing":"gw-1:a"}`},
	{"meal, clock corrected", catalog.TypeMealFinished, `{"clock_fix":"ahead","clock_skew_ms":3600000,"device_at":"2026-03-09T07:00:00Z","device_event_id":"gw-1:a:meal:43.0","device_seq":43,"duration_s":0,"grams_eaten":0,"pet_tag":"","started_at":"2026-03-09T06:59:00Z","thing":"gw-1:a"}`},
	{"refill", catalog.TypeRefilled, `{"device_at":"2026-03-09T07:00:00Z","device_event_id":"e1","device_seq":7,"grams_added":250,"level_g":-1.5,"thing":"gw-1:a"}`},
	{"food low", catalog.TypeFoodLow, `{"device_at":"2026-03-09T07:00:00Z","device_event_id":"e2","device_seq":8,"level_g":40,"thing":"gw-1:a","threshold_g":50}`},
	{"empty", catalog.TypeEmpty, `{"device_at":"2026-03-09T07:00:00Z","device_event_id":"e3","device_seq":9,"level_g":0.4,"thing":"gw-1:a"}`},
	{"empty, no level", catalog.TypeEmpty, `{"device_at":"2026-03-09T07:00:00Z","device_event_id":"e4","device_seq":10,"thing":"gw-1:a"}`},
	{"fault, numbered", catalog.TypeDeviceFault, `{"code":3,"detail":"load cell saturated","device_at":"2026-03-09T07:00:00Z","device_event_id":"e5","device_seq":11,"thing":"gw-1:a"}`},
	{"fault, named", catalog.TypeDeviceFault, `{"code":"ring_overflow","detail":"","device_at":"2026-03-09T07:00:00Z","device_event_id":"e6","device_seq":12,"thing":"gw-1:a"}`},
	{"dropped", catalog.TypeTelemetryDropped, `{"count":120,"device_at":"2026-03-09T07:00:00Z","device_event_id":"e7","device_seq":13,"from":"2026-03-08T07:00:00Z","from_seq":100,"reason":"disk_cap","thing":"gw-1:a","to":"2026-03-08T07:02:00Z","to_seq":219}`},
	{"counter reset", catalog.TypeCounterReset, `{"device_at":"2026-03-09T07:00:00Z","device_event_id":"e8","device_seq":14,"first_seq":0,"last_seq":99871,"new_epoch":4,"old_epoch":3,"thing":"gw-1:a"}`},
	{"completeness", catalog.TypeCompletenessStated, `{"day":"2026-03-09","digest":"ab12","things":{"gw-1:a":{"assigned":1440,"digest":"cd34","dropped":{"disk_cap":3},"dropped_total":3,"duplicates":2,"durable":1430,"missing":7,"ring_refused":0},"gw-1:b":{"assigned":0,"digest":"ef56","dropped":{},"dropped_total":0,"duplicates":0,"durable":0,"missing":0,"partial":true,"ring_refused":0}}}`},
	// Part k of n of a day too large for one event.
	{"completeness, part", catalog.TypeCompletenessStated, `{"day":"2026-03-09","digest":"ab12","part":2,"parts":3,"things":{"gw-9:a":{"assigned":10,"digest":"cd34","dropped":{},"dropped_total":0,"duplicates":0,"durable":10,"missing":0,"ring_refused":0}}}`},
}

// A payload in a chain decodes into its type, strictly, and encodes to the
// same canonical JSON (RFC 8785), so its hash is unchanged: no field was
// renamed, retyped (an integer stays an integer), dropped or made optional.
func TestPayloadsKeepTheirJSON(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range chained {
		pt, ok := catalog.PayloadType(c.typ)
		if !ok {
			t.Errorf("%s: %s has no payload type", c.name, c.typ)
			continue
		}
		covered[c.typ] = true
		v := reflect.New(pt)
		dec := json.NewDecoder(bytes.NewReader([]byte(c.json)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v.Interface()); err != nil {
			t.Errorf("%s: decode into %v: %v", c.name, pt, err)
			continue
		}
		again, err := json.Marshal(v.Interface())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := canon(t, again), canon(t, []byte(c.json)); got != want {
			t.Errorf("%s: %v encodes to\n%s\nwant (as chained)\n%s", c.name, pt, got, want)
		}
	}
	for _, typ := range catalog.Bowline().Types {
		if _, ok := catalog.PayloadType(typ.Name); ok && !covered[typ.Name] {
			t.Errorf("%s: no chained payload to test its type against; add one", typ.Name)
		}
	}
}

// A payload round-trips through the engine: a producer's value, stored as
// the envelope's JSON object (float64 numbers), decodes into an equal value.
func TestPayloadsRoundTripThroughAnEnvelope(t *testing.T) {
	for _, c := range chained {
		pt, _ := catalog.PayloadType(c.typ)
		want := reflect.New(pt)
		if err := json.Unmarshal([]byte(c.json), want.Interface()); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, err := json.Marshal(want.Interface())
		if err != nil {
			t.Fatal(err)
		}
		env := engine.Envelope{ID: "ev-1", Type: c.typ}
		if err := json.Unmarshal(b, &env.Payload); err != nil {
			t.Fatal(err)
		}
		got := reflect.New(pt)
		if err := env.DecodePayload(got.Interface()); err != nil {
			t.Errorf("%s: DecodePayload: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got.Elem().Interface(), want.Elem().Interface()) {
			t.Errorf("%s: round trip = %+v; want %+v", c.name, got.Elem(), want.Elem())
		}
	}
}

func TestDecodeChecksThePayloadType(t *testing.T) {
	env := engine.Envelope{ID: "ev-1", Type: catalog.TypePaymentCompleted, Payload: map[string]any{
		"order_id": "o-1", "payment_id": "pay_1", "amount_cents": 4999.0, "currency": "USD", "customer_id": "c", "pet_id": "p",
		"items": []any{map[string]any{"sku": "TAG-001", "qty": 1.0}},
	}}
	p, err := catalog.Decode[catalog.PaymentCompleted](env)
	if err != nil || p.AmountCents != 4999 || len(p.Items) != 1 || p.Items[0] != (catalog.Item{SKU: "TAG-001", Qty: 1}) {
		t.Errorf("Decode[PaymentCompleted] = %+v, %v; want the payment", p, err)
	}
	var mismatch *catalog.PayloadMismatchError
	if _, err := catalog.Decode[catalog.OrderCreated](env); !errors.As(err, &mismatch) || mismatch.Want != reflect.TypeFor[catalog.PaymentCompleted]() {
		t.Errorf("Decode[OrderCreated](payment) error = %v; want a PayloadMismatchError wanting PaymentCompleted", err)
	}
	env.Type = "row.order.insert"
	if _, err := catalog.Decode[catalog.PaymentCompleted](env); !errors.As(err, &mismatch) || mismatch.Want != nil {
		t.Errorf("Decode(row.order.insert) error = %v; want a PayloadMismatchError (no payload type)", err)
	}
	env.Type, env.Payload = catalog.TypePaymentCompleted, map[string]any{"amount_cents": "lots"}
	if _, err := catalog.Decode[catalog.PaymentCompleted](env); err == nil || errors.As(err, &mismatch) {
		t.Errorf("Decode(amount_cents a string) error = %v; want a decode error", err)
	}
}

func canon(t *testing.T, b []byte) string {
	t.Helper()
	c, err := jcs.Transform(b)
	if err != nil {
		t.Fatalf("canonicalise %s: %v", b, err)
	}
	return string(c)
}

// A device payload is its edge/wire data and catalog.Ingested side by side.
// encoding/json silently drops a field both embedded structs name, so the
// two field sets must stay disjoint, for every device type.
func TestDevicePayloadFields(t *testing.T) {
	added := catalog.FieldNames(catalog.FieldsOf(reflect.TypeFor[catalog.Ingested]()))
	for _, typ := range wire.EventTypes {
		data, ok := wire.DataOf(typ)
		if !ok {
			t.Fatalf("wire.DataOf(%q) = false; want its data type", typ)
		}
		pt, ok := catalog.PayloadType(typ)
		if !ok {
			t.Errorf("%s has no payload type in the catalog", typ)
			continue
		}
		own := catalog.FieldNames(catalog.FieldsOf(reflect.TypeOf(data)))
		for _, f := range own {
			if slices.Contains(added, f) {
				t.Errorf("%s: the gateway's field %q is also one ingest adds (catalog.Ingested)", typ, f)
			}
		}
		if got, want := catalog.FieldNames(catalog.FieldsOf(pt)), append(slices.Clone(own), added...); !slices.Equal(got, want) {
			t.Errorf("%s: payload fields %v; want the wire data's then ingest's %v", typ, got, want)
		}
	}
}

func TestThingOf(t *testing.T) {
	cases := []struct {
		name    string
		env     engine.Envelope
		want    string
		wantErr bool
	}{
		{"device event", engine.Envelope{Type: catalog.TypeRefilled, Payload: map[string]any{"thing": "bowl-1", "device_event_id": "d-1", "grams_added": 10.0}}, "bowl-1", false},
		{"data gap", engine.Envelope{Type: catalog.TypeDataGap, Payload: map[string]any{"thing": "bowl-2", "from_seq": 1.0, "to_seq": 2.0}}, "bowl-2", false},
		{"commerce event", engine.Envelope{Type: catalog.TypeOrderCreated, Payload: map[string]any{"thing": "bowl-3"}}, "", false},
		{"other fields undecodable", engine.Envelope{Type: catalog.TypeDataGap, Payload: map[string]any{"thing": "bowl-4", "from_seq": "ten"}}, "bowl-4", false},
		{"thing undecodable", engine.Envelope{Type: catalog.TypeEmpty, Payload: map[string]any{"thing": 5.0}}, "", true},
	}
	for _, p := range []any{catalog.Ingested{Thing: "bowl-1"}, catalog.DataGap{Thing: "bowl-1"}} {
		if b, _ := json.Marshal(p); !bytes.Contains(b, []byte(`"thing":"bowl-1"`)) {
			t.Errorf("%T in JSON = %s; want its Thing under \"thing\" (ThingOf reads that key)", p, b)
		}
	}
	for _, c := range cases {
		got, err := catalog.ThingOf(c.env)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%s: ThingOf = %q, %v; want %q, error %v", c.name, got, err, c.want, c.wantErr)
		}
	}
	in, err := catalog.IngestedOf(engine.Envelope{Type: catalog.TypeMealFinished, Payload: map[string]any{"thing": "bowl-1", "device_event_id": "d-7", "device_seq": 7.0}})
	if err != nil || in.DeviceEventID != "d-7" || in.DeviceSeq != 7 {
		t.Errorf("IngestedOf(meal) = %+v, %v; want device event d-7, seq 7", in, err)
	}
	if _, err := catalog.IngestedOf(engine.Envelope{Type: catalog.TypeDataGap}); err == nil {
		t.Error("IngestedOf(data gap) error = nil; want not a device event")
	}
}
