package ddbjson

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Errors returned by Unmarshal and Marshal.
var (
	// ErrBadValue marks JSON that is not a DynamoDB JSON attribute value.
	ErrBadValue = errors.New("not a DynamoDB JSON attribute value")
	// ErrUnknownType marks an attribute value type this codec does not know.
	ErrUnknownType = errors.New("unknown attribute value type")
)

// MarshalMap encodes an item as DynamoDB JSON with keys sorted.
func MarshalMap(item map[string]types.AttributeValue) ([]byte, error) {
	v, err := mapValue(item)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Value returns av as a plain JSON-shaped Go value (maps, slices, strings,
// bools), the form an EventBridge filter pattern or JSON path sees.
func Value(av types.AttributeValue) (any, error) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}, nil
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}, nil
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(v.Value)}, nil
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}, nil
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": v.Value}, nil
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": toAny(v.Value)}, nil
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": toAny(v.Value)}, nil
	case *types.AttributeValueMemberBS:
		out := make([]any, len(v.Value))
		for i, b := range v.Value {
			out[i] = base64.StdEncoding.EncodeToString(b)
		}
		return map[string]any{"BS": out}, nil
	case *types.AttributeValueMemberM:
		m, err := mapValue(v.Value)
		if err != nil {
			return nil, err
		}
		return map[string]any{"M": m}, nil
	case *types.AttributeValueMemberL:
		out := make([]any, len(v.Value))
		for i, e := range v.Value {
			ev, err := Value(e)
			if err != nil {
				return nil, fmt.Errorf("list element %d: %w", i, err)
			}
			out[i] = ev
		}
		return map[string]any{"L": out}, nil
	default:
		return nil, fmt.Errorf("%T: %w", av, ErrUnknownType)
	}
}

// MapValue returns item as a plain JSON-shaped map (see Value).
func MapValue(item map[string]types.AttributeValue) (map[string]any, error) {
	return mapValue(item)
}

func mapValue(item map[string]types.AttributeValue) (map[string]any, error) {
	out := make(map[string]any, len(item))
	for k, av := range item {
		v, err := Value(av)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// UnmarshalMap decodes a DynamoDB JSON item such as
// {"pk":{"S":"a"},"n":{"N":"1"}}.
func UnmarshalMap(data []byte) (map[string]types.AttributeValue, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("item: %w: %v", ErrBadValue, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("item is null: %w", ErrBadValue)
	}
	return unmarshalRawMap(raw)
}

// FromValue is the inverse of Value: it turns a JSON-shaped Go value back
// into an attribute value.
func FromValue(v any) (types.AttributeValue, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadValue, err)
	}
	return unmarshalValue(b)
}

func unmarshalRawMap(raw map[string]json.RawMessage) (map[string]types.AttributeValue, error) {
	out := make(map[string]types.AttributeValue, len(raw))
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		av, err := unmarshalValue(raw[k])
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

func unmarshalValue(data []byte) (types.AttributeValue, error) {
	var typed map[string]json.RawMessage
	if err := json.Unmarshal(data, &typed); err != nil || typed == nil {
		return nil, fmt.Errorf("%s: %w", abbrev(data), ErrBadValue)
	}
	if len(typed) != 1 {
		return nil, fmt.Errorf("%s: want exactly one type key: %w", abbrev(data), ErrBadValue)
	}
	for typ, body := range typed {
		av, err := decodeTyped(typ, body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", typ, err)
		}
		return av, nil
	}
	panic("unreachable")
}

func decodeTyped(typ string, body json.RawMessage) (types.AttributeValue, error) {
	switch typ {
	case "S":
		var s string
		if err := strict(body, &s); err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberS{Value: s}, nil
	case "N":
		var s string
		if err := strict(body, &s); err != nil {
			return nil, err
		}
		if !json.Valid([]byte(s)) {
			return nil, fmt.Errorf("number %q: %w", s, ErrBadValue)
		}
		return &types.AttributeValueMemberN{Value: s}, nil
	case "B":
		var s string
		if err := strict(body, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadValue, err)
		}
		return &types.AttributeValueMemberB{Value: b}, nil
	case "BOOL":
		var b bool
		if err := strict(body, &b); err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberBOOL{Value: b}, nil
	case "NULL":
		var b bool
		if err := strict(body, &b); err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberNULL{Value: b}, nil
	case "SS", "NS":
		var ss []string
		if err := strict(body, &ss); err != nil {
			return nil, err
		}
		if typ == "SS" {
			return &types.AttributeValueMemberSS{Value: ss}, nil
		}
		return &types.AttributeValueMemberNS{Value: ss}, nil
	case "BS":
		var ss []string
		if err := strict(body, &ss); err != nil {
			return nil, err
		}
		bs := make([][]byte, len(ss))
		for i, s := range ss {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w: %v", i, ErrBadValue, err)
			}
			bs[i] = b
		}
		return &types.AttributeValueMemberBS{Value: bs}, nil
	case "M":
		var raw map[string]json.RawMessage
		if err := strict(body, &raw); err != nil {
			return nil, err
		}
		m, err := unmarshalRawMap(raw)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case "L":
		var raw []json.RawMessage
		if err := strict(body, &raw); err != nil {
			return nil, err
		}
		l := make([]types.AttributeValue, len(raw))
		for i, r := range raw {
			av, err := unmarshalValue(r)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			l[i] = av
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	default:
		return nil, fmt.Errorf("%q: %w", typ, ErrUnknownType)
	}
}

func strict(body json.RawMessage, v any) error {
	if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		return fmt.Errorf("null: %w", ErrBadValue)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadValue, err)
	}
	return nil
}

func abbrev(b []byte) string {
	const max = 40
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}
