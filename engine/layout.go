package engine

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

// IsEventItem reports whether item (an events-table item or stream image) is
// an event row rather than a head row.
func IsEventItem(item map[string]types.AttributeValue) bool {
	pk, ok := item[AttrPK].(*types.AttributeValueMemberS)
	return ok && strings.HasPrefix(pk.Value, tenantPKPrefix) && strings.HasSuffix(pk.Value, EventPKSuffix)
}

// EventItem returns the events-table item of env.
func EventItem(env Envelope) (map[string]types.AttributeValue, error) {
	payload, err := attributevalue.MarshalMap(env.Payload)
	if err != nil {
		return nil, fmt.Errorf("event %s payload: %w", env.ID, err)
	}
	if payload == nil {
		payload = map[string]types.AttributeValue{}
	}
	return map[string]types.AttributeValue{
		AttrPK:            attr.S(EventPK(env.Tenant)),
		AttrSK:            attr.S(SeqSK(env.Seq)),
		AttrID:            attr.S(env.ID),
		AttrType:          attr.S(env.Type),
		AttrTenant:        attr.S(env.Tenant),
		AttrCorrelationID: attr.S(env.CorrelationID),
		AttrActor:         attr.S(env.Actor),
		AttrOccurredAt:    attr.S(env.OccurredAt.UTC().Format(TimeLayout)),
		AttrPayload:       &types.AttributeValueMemberM{Value: payload},
		AttrSeq:           attr.Uint(env.Seq),
		AttrPrevHash:      attr.S(env.PrevHash),
		AttrHash:          attr.S(env.Hash),
	}, nil
}

// DecodeItem turns an event row (from GetItem, Query or a DynamoDB stream
// image converted with attributevalue.FromDynamoDBStreamsMap) back into an
// Envelope. It fails, naming the attribute, when the item is not a complete
// event row.
func DecodeItem(item map[string]types.AttributeValue) (Envelope, error) {
	var env Envelope
	str := func(name string) (string, error) {
		v, ok := item[name].(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("event item: attribute %q missing or not a string", name)
		}
		return v.Value, nil
	}
	var err error
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{AttrID, &env.ID}, {AttrType, &env.Type}, {AttrTenant, &env.Tenant},
		{AttrCorrelationID, &env.CorrelationID}, {AttrActor, &env.Actor},
		{AttrPrevHash, &env.PrevHash}, {AttrHash, &env.Hash},
	} {
		if *f.dst, err = str(f.name); err != nil {
			return Envelope{}, err
		}
	}
	at, err := str(AttrOccurredAt)
	if err != nil {
		return Envelope{}, err
	}
	if env.OccurredAt, err = parseTime(at); err != nil {
		return Envelope{}, fmt.Errorf("event item %s: %w", env.ID, err)
	}
	n, ok := item[AttrSeq].(*types.AttributeValueMemberN)
	if !ok {
		return Envelope{}, fmt.Errorf("event item %s: attribute %q missing or not a number", env.ID, AttrSeq)
	}
	if env.Seq, err = strconv.ParseUint(n.Value, 10, 64); err != nil {
		return Envelope{}, fmt.Errorf("event item %s: seq %q: %w", env.ID, n.Value, err)
	}
	p, ok := item[AttrPayload].(*types.AttributeValueMemberM)
	if !ok {
		return Envelope{}, fmt.Errorf("event item %s: attribute %q missing or not a map", env.ID, AttrPayload)
	}
	env.Payload = map[string]any{}
	if err := attributevalue.UnmarshalMap(p.Value, &env.Payload); err != nil {
		return Envelope{}, fmt.Errorf("event item %s payload: %w", env.ID, err)
	}
	return env, nil
}

// DecodeStreamImage is DecodeItem for a DynamoDB Streams NewImage.
func DecodeStreamImage(image map[string]streamtypes.AttributeValue) (Envelope, error) {
	item, err := attributevalue.FromDynamoDBStreamsMap(image)
	if err != nil {
		return Envelope{}, fmt.Errorf("stream image: %w", err)
	}
	return DecodeItem(item)
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(TimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("occurred_at %q: want layout %s: %w", s, TimeLayout, err)
	}
	return t, nil
}
