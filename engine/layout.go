package engine

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// The events table layout (DESIGN.md). Both kinds of row share the table:
//
//	head row:  pk = "TENANT#<t>#HEAD",  sk = "HEAD"
//	           tenant, last_seq (N), last_hash, updated_at
//	event row: pk = "TENANT#<t>#EVENT", sk = seq as 20 zero-padded digits
//	           id, type, tenant, correlation_id, actor, occurred_at (S, TimeLayout),
//	           payload (M), seq (N), prev_hash, hash
//
// Idempotent emits add a dedup row to the inbox table:
//
//	dedup row: pk = "EMIT#<t>#<key>", event_id, tenant, type, created_at, ttl (N, epoch seconds)
//
// Event rows are only ever inserted; the relay forwards INSERT records of rows
// whose pk ends in EventPKSuffix.
const (
	AttrPK            = "pk"
	AttrSK            = "sk"
	AttrID            = "id"
	AttrType          = "type"
	AttrTenant        = "tenant"
	AttrCorrelationID = "correlation_id"
	AttrActor         = "actor"
	AttrOccurredAt    = "occurred_at"
	AttrPayload       = "payload"
	AttrSeq           = "seq"
	AttrPrevHash      = "prev_hash"
	AttrHash          = "hash"
	AttrLastSeq       = "last_seq"
	AttrLastHash      = "last_hash"
	AttrUpdatedAt     = "updated_at"
	AttrEventID       = "event_id"
	AttrCreatedAt     = "created_at"
	AttrTTL           = "ttl"

	// HeadSK is the sort key of every head row.
	HeadSK = "HEAD"
	// EventPKSuffix ends the partition key of every event row.
	EventPKSuffix = "#EVENT"
	// HeadPKSuffix ends the partition key of every head row.
	HeadPKSuffix = "#HEAD"
)

// HeadPK is the partition key of tenant's chain head row.
func HeadPK(tenant string) string { return "TENANT#" + tenant + HeadPKSuffix }

// EventPK is the partition key of tenant's event rows.
func EventPK(tenant string) string { return "TENANT#" + tenant + EventPKSuffix }

// SeqSK is the sort key of the event row with sequence seq.
func SeqSK(seq uint64) string { return fmt.Sprintf("%020d", seq) }

// DedupPK is the inbox-table key of tenant's idempotency key.
func DedupPK(tenant, key string) string { return "EMIT#" + tenant + "#" + key }

// IsEventItem reports whether item (an events-table item or stream image) is
// an event row rather than a head row.
func IsEventItem(item map[string]types.AttributeValue) bool {
	pk, ok := item[AttrPK].(*types.AttributeValueMemberS)
	return ok && strings.HasPrefix(pk.Value, "TENANT#") && strings.HasSuffix(pk.Value, EventPKSuffix)
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
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	return map[string]types.AttributeValue{
		AttrPK:            s(EventPK(env.Tenant)),
		AttrSK:            s(SeqSK(env.Seq)),
		AttrID:            s(env.ID),
		AttrType:          s(env.Type),
		AttrTenant:        s(env.Tenant),
		AttrCorrelationID: s(env.CorrelationID),
		AttrActor:         s(env.Actor),
		AttrOccurredAt:    s(env.OccurredAt.UTC().Format(TimeLayout)),
		AttrPayload:       &types.AttributeValueMemberM{Value: payload},
		AttrSeq:           &types.AttributeValueMemberN{Value: strconv.FormatUint(env.Seq, 10)},
		AttrPrevHash:      s(env.PrevHash),
		AttrHash:          s(env.Hash),
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
