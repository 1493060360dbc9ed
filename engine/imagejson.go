package engine

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DecodeImageJSON decodes an event row in DynamoDB JSON, the form in which
// the relay (and an EventBridge Pipe forwarding <$.dynamodb.NewImage>)
// sends a stream NewImage as a message body:
//
//	{"pk":{"S":"TENANT#t1#EVENT"},"seq":{"N":"7"},"payload":{"M":{...}},...}
func DecodeImageJSON(body []byte) (Envelope, error) {
	item, err := ImageFromJSON(body)
	if err != nil {
		return Envelope{}, err
	}
	return DecodeItem(item)
}

// ImageFromJSON parses an item in DynamoDB JSON into attribute values.
func ImageFromJSON(body []byte) (map[string]types.AttributeValue, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("dynamodb json image: %w", err)
	}
	item := make(map[string]types.AttributeValue, len(raw))
	for k, v := range raw {
		av, err := avFromJSON(v)
		if err != nil {
			return nil, fmt.Errorf("dynamodb json image attribute %q: %w", k, err)
		}
		item[k] = av
	}
	return item, nil
}

func avFromJSON(b json.RawMessage) (types.AttributeValue, error) {
	var tagged map[string]json.RawMessage
	if err := json.Unmarshal(b, &tagged); err != nil {
		return nil, err
	}
	if len(tagged) != 1 {
		return nil, fmt.Errorf("want exactly one type tag; got %d", len(tagged))
	}
	for tag, v := range tagged {
		switch tag {
		case "S":
			var s string
			err := json.Unmarshal(v, &s)
			return &types.AttributeValueMemberS{Value: s}, err
		case "N":
			var s string
			err := json.Unmarshal(v, &s)
			return &types.AttributeValueMemberN{Value: s}, err
		case "B":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, err
			}
			bs, err := base64.StdEncoding.DecodeString(s)
			return &types.AttributeValueMemberB{Value: bs}, err
		case "BOOL":
			var x bool
			err := json.Unmarshal(v, &x)
			return &types.AttributeValueMemberBOOL{Value: x}, err
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}, nil
		case "SS", "NS":
			var ss []string
			if err := json.Unmarshal(v, &ss); err != nil {
				return nil, err
			}
			if tag == "SS" {
				return &types.AttributeValueMemberSS{Value: ss}, nil
			}
			return &types.AttributeValueMemberNS{Value: ss}, nil
		case "BS":
			var ss []string
			if err := json.Unmarshal(v, &ss); err != nil {
				return nil, err
			}
			bs := make([][]byte, len(ss))
			for i, s := range ss {
				var err error
				if bs[i], err = base64.StdEncoding.DecodeString(s); err != nil {
					return nil, err
				}
			}
			return &types.AttributeValueMemberBS{Value: bs}, nil
		case "L":
			var list []json.RawMessage
			if err := json.Unmarshal(v, &list); err != nil {
				return nil, err
			}
			out := make([]types.AttributeValue, len(list))
			for i, e := range list {
				av, err := avFromJSON(e)
				if err != nil {
					return nil, fmt.Errorf("list element %d: %w", i, err)
				}
				out[i] = av
			}
			return &types.AttributeValueMemberL{Value: out}, nil
		case "M":
			var m map[string]json.RawMessage
			if err := json.Unmarshal(v, &m); err != nil {
				return nil, err
			}
			out := make(map[string]types.AttributeValue, len(m))
			for k, e := range m {
				av, err := avFromJSON(e)
				if err != nil {
					return nil, fmt.Errorf("map key %q: %w", k, err)
				}
				out[k] = av
			}
			return &types.AttributeValueMemberM{Value: out}, nil
		default:
			return nil, fmt.Errorf("unknown type tag %q", tag)
		}
	}
	panic("unreachable")
}
