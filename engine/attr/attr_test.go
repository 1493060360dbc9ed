package attr_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/ddbjson"
)

// TestWireForm pins each helper to the DynamoDB JSON the hand-built member
// types produced.
func TestWireForm(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  types.AttributeValue
		want string
	}{
		{"S", attr.S("TENANT#t1#EVENT"), `{"v":{"S":"TENANT#t1#EVENT"}}`},
		{"S empty", attr.S(""), `{"v":{"S":""}}`},
		{"N", attr.N(-42), `{"v":{"N":"-42"}}`},
		{"N max", attr.N(math.MaxInt64), `{"v":{"N":"9223372036854775807"}}`},
		{"Uint max", attr.Uint(math.MaxUint64), `{"v":{"N":"18446744073709551615"}}`},
		{"Float", attr.Float(12.5), `{"v":{"N":"12.5"}}`},
		{"Float integral", attr.Float(3), `{"v":{"N":"3"}}`},
		{"Float tiny", attr.Float(1e-7), `{"v":{"N":"0.0000001"}}`},
		{"Bool", attr.Bool(true), `{"v":{"BOOL":true}}`},
		{"SS", attr.SS("a", "b"), `{"v":{"SS":["a","b"]}}`},
	} {
		b, err := ddbjson.MarshalMap(map[string]types.AttributeValue{"v": tc.got})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(b) != tc.want {
			t.Errorf("%s = %s; want %s", tc.name, b, tc.want)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		got  map[string]types.AttributeValue
		want string
	}{
		{attr.Key("ORDER#o1", "ORDER"), `{"pk":{"S":"ORDER#o1"},"sk":{"S":"ORDER"}}`},
		{attr.HashKey("IDEMP#e1:s"), `{"pk":{"S":"IDEMP#e1:s"}}`},
	} {
		b, err := ddbjson.MarshalMap(tc.got)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("key = %s; want %s", b, tc.want)
		}
	}
}

func TestGet(t *testing.T) {
	item := map[string]types.AttributeValue{
		"s": attr.S("x"), "n": attr.N(7), "f": attr.Float(1.5), "b": attr.Bool(true),
	}
	for _, tc := range []struct {
		name string
		s    string
		n    int64
	}{
		{"s", "x", 0}, {"n", "", 7}, {"f", "", 0}, {"b", "", 0}, {"absent", "", 0},
	} {
		if got := attr.GetS(item, tc.name); got != tc.s {
			t.Errorf("GetS(%q) = %q; want %q", tc.name, got, tc.s)
		}
		if got := attr.GetN(item, tc.name); got != tc.n {
			t.Errorf("GetN(%q) = %d; want %d", tc.name, got, tc.n)
		}
	}
}

func Example() {
	item := attr.Key("DEVICE#bowl-1", "DEVICE")
	item["tenant"] = attr.S("t1")
	item["version"] = attr.N(3)
	b, _ := ddbjson.MarshalMap(item)
	fmt.Println(string(b))
	fmt.Println(attr.GetS(item, "tenant"), attr.GetN(item, "version"))
	// Output:
	// {"pk":{"S":"DEVICE#bowl-1"},"sk":{"S":"DEVICE"},"tenant":{"S":"t1"},"version":{"N":"3"}}
	// t1 3
}
