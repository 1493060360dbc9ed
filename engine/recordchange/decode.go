package recordchange

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/ddbjson"
)

// ErrBadRecord marks a message body that is not a usable stream record.
var ErrBadRecord = errors.New("not a usable stream record")

type wireRecord struct {
	EventID   string `json:"eventID"`
	EventName string `json:"eventName"`
	Dynamodb  struct {
		Created  float64         `json:"ApproximateCreationDateTime"`
		Keys     json.RawMessage `json:"Keys"`
		NewImage json.RawMessage `json:"NewImage"`
		OldImage json.RawMessage `json:"OldImage"`
	} `json:"dynamodb"`
}

// Decode turns a record-changes message body into a row-change envelope.
func Decode(body []byte) (engine.Envelope, error) {
	var r wireRecord
	if err := json.Unmarshal(body, &r); err != nil {
		return engine.Envelope{}, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	op := map[string]string{"INSERT": "insert", "MODIFY": "modify", "REMOVE": "remove"}[r.EventName]
	if op == "" || r.EventID == "" {
		return engine.Envelope{}, fmt.Errorf("record %q event %q: %w", r.EventID, r.EventName, ErrBadRecord)
	}
	payload := map[string]any{}
	var images []map[string]types.AttributeValue
	for name, raw := range map[string]json.RawMessage{"keys": r.Dynamodb.Keys, "new": r.Dynamodb.NewImage, "old": r.Dynamodb.OldImage} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		item, err := ddbjson.UnmarshalMap(raw)
		if err != nil {
			return engine.Envelope{}, fmt.Errorf("record %s %s: %w: %v", r.EventID, name, ErrBadRecord, err)
		}
		var plain map[string]any
		if err := attributevalue.UnmarshalMap(item, &plain); err != nil {
			return engine.Envelope{}, fmt.Errorf("record %s %s: %w: %v", r.EventID, name, ErrBadRecord, err)
		}
		payload[name] = plain
		if name != "keys" {
			images = append(images, item)
		}
	}
	keys, _ := payload["keys"].(map[string]any)
	entity := entityOf(images, keys)
	if entity == "" {
		return engine.Envelope{}, fmt.Errorf("record %s: no entity attribute or pk: %w", r.EventID, ErrBadRecord)
	}
	env := engine.Envelope{
		ID:      r.EventID,
		Type:    engine.RowChangePrefix + entity + "." + op,
		Tenant:  stringAttr(images, "tenant"),
		Actor:   engine.DefaultActor,
		Payload: payload,
	}
	env.CorrelationID = env.ID
	if r.Dynamodb.Created > 0 {
		env.OccurredAt = time.Unix(int64(r.Dynamodb.Created), 0).UTC()
	}
	return env, nil
}

func entityOf(images []map[string]types.AttributeValue, keys map[string]any) string {
	if e := stringAttr(images, "entity"); e != "" {
		return strings.ToLower(e)
	}
	pk, _ := keys["pk"].(string)
	if pk == "" {
		pk = stringAttr(images, "pk")
	}
	head, _, _ := strings.Cut(pk, "#")
	return strings.ToLower(head)
}

func stringAttr(images []map[string]types.AttributeValue, name string) string {
	for _, img := range images {
		if v, ok := img[name].(*types.AttributeValueMemberS); ok && v.Value != "" {
			return v.Value
		}
	}
	return ""
}
