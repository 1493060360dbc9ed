package engine

import (
	"fmt"

	"github.com/bowline-iot/bowline/engine/ddbjson"
)

// DecodeImageJSON decodes an event row in DynamoDB JSON, the form in which
// the relay (and an EventBridge Pipe forwarding <$.dynamodb.NewImage>) sends
// a stream NewImage as a message body:
//
//	{"pk":{"S":"TENANT#t1#EVENT"},"seq":{"N":"7"},"payload":{"M":{...}},...}
func DecodeImageJSON(body []byte) (Envelope, error) {
	item, err := ddbjson.UnmarshalMap(body)
	if err != nil {
		return Envelope{}, fmt.Errorf("event image: %w", err)
	}
	return DecodeItem(item)
}
