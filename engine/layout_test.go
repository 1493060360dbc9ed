package engine_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/ddbjson"
)

func sealedFixture(t *testing.T) engine.Envelope {
	t.Helper()
	env := fixtureEnvelope()
	if err := engine.Seal(&env, engine.Genesis); err != nil {
		t.Fatal(err)
	}
	return env
}

func TestEventItemKeys(t *testing.T) {
	env := sealedFixture(t)
	env.Seq = 42
	item, err := engine.EventItem(env)
	if err != nil {
		t.Fatal(err)
	}
	for attr, want := range map[string]string{
		"pk": "TENANT#t1#EVENT", "sk": "00000000000000000042", "id": env.ID, "type": "bowl.meal_finished",
		"occurred_at": "2026-11-29T12:00:00.123000000Z", "prev_hash": engine.Genesis,
	} {
		got, ok := item[attr].(*types.AttributeValueMemberS)
		if !ok || got.Value != want {
			t.Errorf("EventItem()[%q] = %#v; want S %q", attr, item[attr], want)
		}
	}
	if got, ok := item["seq"].(*types.AttributeValueMemberN); !ok || got.Value != "42" {
		t.Errorf("EventItem()[seq] = %#v; want N 42", item["seq"])
	}
	if !engine.IsEventItem(item) {
		t.Errorf("IsEventItem(event row) = false; want true")
	}
	head := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: engine.HeadPK("t1")}}
	if engine.IsEventItem(head) {
		t.Errorf("IsEventItem(head row) = true; want false")
	}
}

func TestDecodeRoundTrips(t *testing.T) {
	env := sealedFixture(t)
	item, err := engine.EventItem(env)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got engine.Envelope, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, env) {
			t.Errorf("%s = %+v; want %+v", name, got, env)
		}
		if h, _ := engine.ChainHash(got.PrevHash, got); h != env.Hash {
			t.Errorf("%s: recomputed hash %s; want %s", name, h, env.Hash)
		}
	}
	got, err := engine.DecodeItem(item)
	check("DecodeItem", got, err)

	body, err := ddbjson.MarshalMap(item)
	if err != nil {
		t.Fatal(err)
	}
	got, err = engine.DecodeImageJSON(body)
	check("DecodeImageJSON", got, err)

	got, err = engine.DecodeStreamImage(toStream(item))
	check("DecodeStreamImage", got, err)
}

func TestDecodeItemErrors(t *testing.T) {
	env := sealedFixture(t)
	for _, tt := range []struct {
		attr  string
		value types.AttributeValue // nil deletes
		want  string
	}{
		{"id", nil, `"id" missing`},
		{"seq", &types.AttributeValueMemberS{Value: "1"}, `"seq" missing or not a number`},
		{"occurred_at", &types.AttributeValueMemberS{Value: "2026-11-29T12:00:00Z"}, "want layout"},
		{"payload", &types.AttributeValueMemberS{Value: "{}"}, `"payload" missing or not a map`},
	} {
		item, _ := engine.EventItem(env)
		if tt.value == nil {
			delete(item, tt.attr)
		} else {
			item[tt.attr] = tt.value
		}
		_, err := engine.DecodeItem(item)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DecodeItem(bad %s) error = %v; want one containing %q", tt.attr, err, tt.want)
		}
	}
}

func toStream(m map[string]types.AttributeValue) map[string]streamtypes.AttributeValue {
	out := map[string]streamtypes.AttributeValue{}
	for k, v := range m {
		out[k] = toStreamValue(v)
	}
	return out
}

func toStreamValue(v types.AttributeValue) streamtypes.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &streamtypes.AttributeValueMemberS{Value: v.Value}
	case *types.AttributeValueMemberN:
		return &streamtypes.AttributeValueMemberN{Value: v.Value}
	case *types.AttributeValueMemberBOOL:
		return &streamtypes.AttributeValueMemberBOOL{Value: v.Value}
	case *types.AttributeValueMemberNULL:
		return &streamtypes.AttributeValueMemberNULL{Value: v.Value}
	case *types.AttributeValueMemberL:
		l := make([]streamtypes.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = toStreamValue(e)
		}
		return &streamtypes.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &streamtypes.AttributeValueMemberM{Value: toStream(v.Value)}
	}
	panic("unexpected attribute value")
}
