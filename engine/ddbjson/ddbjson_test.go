package ddbjson

import (
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

var fixtures = []struct {
	name string
	json string
	item map[string]types.AttributeValue
}{
	{"string", `{"pk":{"S":"TENANT#t1#EVENT"}}`, map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "TENANT#t1#EVENT"}}},
	{"number stays decimal", `{"n":{"N":"12345678901234567890.5"}}`, map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "12345678901234567890.5"}}},
	{"binary", `{"b":{"B":"AAEC"}}`, map[string]types.AttributeValue{"b": &types.AttributeValueMemberB{Value: []byte{0, 1, 2}}}},
	{"bool and null", `{"f":{"BOOL":false},"z":{"NULL":true}}`, map[string]types.AttributeValue{"f": &types.AttributeValueMemberBOOL{Value: false}, "z": &types.AttributeValueMemberNULL{Value: true}}},
	{"sets", `{"bs":{"BS":["AQ=="]},"ns":{"NS":["1","2"]},"ss":{"SS":["a","b"]}}`, map[string]types.AttributeValue{
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}}},
		"ns": &types.AttributeValueMemberNS{Value: []string{"1", "2"}},
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
	}},
	{"nested map and list", `{"payload":{"M":{"grams":{"N":"12"},"tags":{"L":[{"S":"x"},{"M":{}}]}}}}`, map[string]types.AttributeValue{
		"payload": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"grams": &types.AttributeValueMemberN{Value: "12"},
			"tags": &types.AttributeValueMemberL{Value: []types.AttributeValue{
				&types.AttributeValueMemberS{Value: "x"},
				&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
			}},
		}},
	}},
	{"empty item", `{}`, map[string]types.AttributeValue{}},
}

func TestMarshalMap(t *testing.T) {
	for _, f := range fixtures {
		got, err := MarshalMap(f.item)
		if err != nil {
			t.Fatalf("%s: MarshalMap: %v", f.name, err)
		}
		if string(got) != f.json {
			t.Errorf("%s: MarshalMap = %s; want %s", f.name, got, f.json)
		}
	}
}

func TestUnmarshalMap(t *testing.T) {
	for _, f := range fixtures {
		got, err := UnmarshalMap([]byte(f.json))
		if err != nil {
			t.Fatalf("%s: UnmarshalMap: %v", f.name, err)
		}
		if !reflect.DeepEqual(got, f.item) {
			t.Errorf("%s: UnmarshalMap(%s) = %#v; want %#v", f.name, f.json, got, f.item)
		}
	}
}

func TestUnmarshalMapRejects(t *testing.T) {
	for _, c := range []struct {
		in   string
		want error
	}{
		{`not json`, ErrBadValue},
		{`null`, ErrBadValue},
		{`{"a":"plain"}`, ErrBadValue},
		{`{"a":{}}`, ErrBadValue},
		{`{"a":{"S":"x","N":"1"}}`, ErrBadValue},
		{`{"a":{"X":"x"}}`, ErrUnknownType},
		{`{"a":{"N":"one"}}`, ErrBadValue},
		{`{"a":{"S":null}}`, ErrBadValue},
		{`{"a":{"B":"!!"}}`, ErrBadValue},
		{`{"a":{"L":[{"Q":1}]}}`, ErrUnknownType},
	} {
		_, err := UnmarshalMap([]byte(c.in))
		if !errors.Is(err, c.want) {
			t.Errorf("UnmarshalMap(%s) error = %v; want %v", c.in, err, c.want)
		}
	}
}

func FuzzUnmarshalMap(f *testing.F) {
	for _, fx := range fixtures {
		f.Add([]byte(fx.json))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		item, err := UnmarshalMap(data)
		if err != nil {
			return
		}
		out, err := MarshalMap(item)
		if err != nil {
			t.Fatalf("MarshalMap after UnmarshalMap(%q): %v", data, err)
		}
		again, err := UnmarshalMap(out)
		if err != nil || !reflect.DeepEqual(again, item) {
			t.Fatalf("round trip of %q: got %#v, %v; want %#v", data, again, err, item)
		}
	})
}
