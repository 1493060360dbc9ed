package recordchange

import (
	"errors"
	"reflect"
	"testing"
)

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name       string
		body       string
		wantType   string
		wantTenant string
		wantNew    map[string]any
		wantErr    error
	}{
		{
			name:     "insert typed from pk",
			body:     `{"eventID":"r1","eventName":"INSERT","dynamodb":{"Keys":{"pk":{"S":"ORDER#o1"},"sk":{"S":"ORDER"}},"NewImage":{"pk":{"S":"ORDER#o1"},"sk":{"S":"ORDER"},"tenant":{"S":"t1"},"amount_cents":{"N":"4999"}}}}`,
			wantType: "row.order.insert", wantTenant: "t1",
			wantNew: map[string]any{"pk": "ORDER#o1", "sk": "ORDER", "tenant": "t1", "amount_cents": float64(4999)},
		},
		{
			name:     "entity attribute wins",
			body:     `{"eventID":"r2","eventName":"MODIFY","dynamodb":{"Keys":{"pk":{"S":"TENANT#t1"},"sk":{"S":"CONTACT#c1"}},"NewImage":{"pk":{"S":"TENANT#t1"},"entity":{"S":"Contact"}},"OldImage":{"pk":{"S":"TENANT#t1"},"entity":{"S":"Contact"}}}}`,
			wantType: "row.contact.modify",
			wantNew:  map[string]any{"pk": "TENANT#t1", "entity": "Contact"},
		},
		{
			name:     "remove has only the old image",
			body:     `{"eventID":"r3","eventName":"REMOVE","dynamodb":{"Keys":{"pk":{"S":"PET#p1"}},"OldImage":{"pk":{"S":"PET#p1"},"tenant":{"S":"t2"}}}}`,
			wantType: "row.pet.remove", wantTenant: "t2",
		},
		{name: "not json", body: `nope`, wantErr: ErrBadRecord},
		{name: "unknown event name", body: `{"eventID":"r4","eventName":"TTL","dynamodb":{}}`, wantErr: ErrBadRecord},
		{name: "no pk", body: `{"eventID":"r5","eventName":"INSERT","dynamodb":{"NewImage":{"x":{"S":"y"}}}}`, wantErr: ErrBadRecord},
		{name: "bad image", body: `{"eventID":"r6","eventName":"INSERT","dynamodb":{"NewImage":{"x":{"Q":"y"}}}}`, wantErr: ErrBadRecord},
	} {
		env, err := Decode([]byte(c.body))
		if !errors.Is(err, c.wantErr) {
			t.Errorf("%s: Decode error = %v; want %v", c.name, err, c.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if env.Type != c.wantType || env.Tenant != c.wantTenant {
			t.Errorf("%s: Decode = type %q tenant %q; want %q %q", c.name, env.Type, env.Tenant, c.wantType, c.wantTenant)
		}
		if c.wantNew != nil && !reflect.DeepEqual(env.Payload["new"], c.wantNew) {
			t.Errorf("%s: payload.new = %#v; want %#v", c.name, env.Payload["new"], c.wantNew)
		}
	}
}
