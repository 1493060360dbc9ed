// Package attr builds and reads DynamoDB attribute values without the
// ceremony of the SDK's member types: attr.S("x") for
// &types.AttributeValueMemberS{Value: "x"}, attr.Key(pk, sk) for a table key.
//
// The engine's tables key their items on the string attributes "pk" and,
// when the table has a sort key, "sk"; Key and HashKey build those key maps.
// Which strings go into them is decided by the keys.go of the package that
// owns the row, not here.
//
// Numbers are encoded the way strconv formats them (decimal, no exponent for
// integers, shortest round-trip form for floats), so a value written through
// this package is byte for byte what the hand-built member types wrote.
//
// # Caveats
//
// GetS and GetN return the zero value for an absent attribute and for one of
// another type alike; use them where "missing" and "empty" mean the same.
package attr

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The key attribute names of the engine's tables.
const (
	PK = "pk" // partition key, S
	SK = "sk" // sort key, S
)

// S is a string attribute value.
func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// N is a number attribute value holding v.
func N(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// Uint is a number attribute value holding v.
func Uint(v uint64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(v, 10)}
}

// Float is a number attribute value holding v in its shortest exact decimal
// form. v must be finite: DynamoDB has no NaN or infinity.
func Float(v float64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(v, 'f', -1, 64)}
}

// Bool is a boolean attribute value.
func Bool(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }

// SS is a string-set attribute value. DynamoDB rejects an empty set.
func SS(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }

// Key is the key of an item in a table with a sort key.
func Key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{PK: S(pk), SK: S(sk)}
}

// HashKey is the key of an item in a table with a partition key only.
func HashKey(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{PK: S(pk)}
}

// GetS returns item's string attribute name, or "" when it is absent or
// not a string.
func GetS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// GetN returns item's number attribute name as an integer, or 0 when it is
// absent, not a number or not an integer.
func GetN(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}
