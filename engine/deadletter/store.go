package deadletter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

const timeLayout = time.RFC3339Nano

// Letter is one dead letter.
type Letter struct {
	Tenant       string `json:"tenant,omitempty"`
	EventID      string `json:"event_id,omitempty"`
	EventType    string `json:"type,omitempty"`
	Subscription string `json:"subscription,omitempty"`
	Error        string `json:"error"`
	Attempts     int    `json:"attempts,omitempty"`
	ReceiveCount int    `json:"receive_count,omitempty"`
	MessageID    string `json:"message_id,omitempty"`
	GroupID      string `json:"group_id,omitempty"`
	Body         string `json:"body,omitempty"`
	// Raw is the input as it arrived, byte for byte (a binary attribute:
	// device bytes need not be UTF-8), at most MaxRaw bytes; RawSHA256 and
	// RawSize describe the whole input even when Raw was cut.
	Raw       []byte    `json:"raw,omitempty"`
	RawSHA256 string    `json:"raw_sha256,omitempty"`
	RawSize   int       `json:"raw_size,omitempty"`
	At        time.Time `json:"at"`
	Poison    bool      `json:"poison,omitempty"`
	// RedrivenAt is set when redrive (or a replay) moved the work back.
	RedrivenAt time.Time `json:"redriven_at,omitzero"`
	// ExpiresAt is when DynamoDB's TTL may delete the letter: At + TTL.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// Key names the letter's row for operator tools: "<tenant>/<event_id>/<subscription>"
// for a tenant letter, "POISON/<sort key>" for a poison pill.
func (l Letter) Key() string {
	if l.Poison {
		return PoisonPK + "/" + l.At.UTC().Format(timeLayout) + "#" + l.MessageID
	}
	return l.Tenant + "/" + l.EventID + "/" + l.Subscription
}

// Open reports whether the letter still stands for undone work.
func (l Letter) Open() bool { return l.RedrivenAt.IsZero() }

// DynamoAPI is the part of the DynamoDB client the store uses; it must be
// safe for concurrent use.
type DynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Errors of the store.
var (
	// ErrIncomplete: a tenant letter lacks its tenant, event or subscription.
	ErrIncomplete = errors.New("dead letter needs tenant, event id and subscription")
)

// Store reads and writes the dead_letters table.
type Store struct {
	client DynamoAPI
	table  string
	now    func() time.Time
}

// New returns a Store on table. now defaults to time.Now.
func New(client DynamoAPI, table string, now func() time.Time) (*Store, error) {
	if client == nil || table == "" {
		return nil, errors.New("deadletter: client and table are required")
	}
	if now == nil {
		now = time.Now
	}
	return &Store{client: client, table: table, now: now}, nil
}

// Record writes (or overwrites) the tenant-scoped letter of
// (l.EventID, l.Subscription), its texts capped (Bound).
func (s *Store) Record(ctx context.Context, l Letter) error {
	if l.Tenant == "" || l.EventID == "" || l.Subscription == "" {
		return fmt.Errorf("record dead letter of event %q for tenant %q, subscription %q: %w", l.EventID, l.Tenant, l.Subscription, ErrIncomplete)
	}
	if l.At.IsZero() {
		l.At = s.now()
	}
	l.Poison, l.RedrivenAt = false, time.Time{}
	item := encode(letterKey(l.Tenant, l.EventID, l.Subscription), l)
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		return fmt.Errorf("record dead letter of event %s for %s: %w", l.EventID, l.Subscription, err)
	}
	return nil
}

// RecordPoison writes a poison pill under the global partition, its texts
// capped (Bound).
func (s *Store) RecordPoison(ctx context.Context, l Letter) error {
	if l.At.IsZero() {
		l.At = s.now()
	}
	l.Poison = true
	item := encode(poisonKey(l.At, l.MessageID), l)
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		return fmt.Errorf("record poison pill of message %s: %w", l.MessageID, err)
	}
	return nil
}

// ForEvent returns the letters of one event of tenant.
func (s *Store) ForEvent(ctx context.Context, tenant, eventID string) ([]Letter, error) {
	return s.query(ctx, tenantPK(tenant), eventLetters(eventID))
}

// Tenant returns every letter of tenant.
func (s *Store) Tenant(ctx context.Context, tenant string) ([]Letter, error) {
	return s.query(ctx, tenantPK(tenant), letterSKPrefix)
}

// Poison returns every poison pill, oldest first: one query per partition
// they are spread over.
func (s *Store) Poison(ctx context.Context) ([]Letter, error) {
	var out []Letter
	for _, pk := range poisonPKs() {
		ls, err := s.query(ctx, pk, "")
		if err != nil {
			return nil, err
		}
		out = append(out, ls...)
	}
	slices.SortStableFunc(out, func(a, b Letter) int { return a.At.Compare(b.At) })
	return out, nil
}

// All returns every letter and poison pill (a Scan: operator use only).
func (s *Store) All(ctx context.Context) ([]Letter, error) {
	var out []Letter
	var start map[string]types.AttributeValue
	for {
		page, err := s.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.table), ExclusiveStartKey: start})
		if err != nil {
			return nil, fmt.Errorf("scan dead letters in %s: %w", s.table, err)
		}
		for _, it := range page.Items {
			if attr.GetS(it, attr.PK) != UnmatchedPK {
				out = append(out, decode(it))
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = page.LastEvaluatedKey
	}
}

func (s *Store) query(ctx context.Context, pk, skPrefix string) ([]Letter, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": attr.S(pk)},
		ConsistentRead:            aws.Bool(true),
	}
	if skPrefix != "" {
		in.KeyConditionExpression = aws.String("pk = :pk AND begins_with(sk, :sk)")
		in.ExpressionAttributeValues[":sk"] = attr.S(skPrefix)
	}
	var out []Letter
	for {
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("query dead letters %s %s: %w", pk, skPrefix, err)
		}
		for _, it := range page.Items {
			out = append(out, decode(it))
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// MarkRedriven marks the letter of (eventID, subscription) as moved back
// for replay.
func (s *Store) MarkRedriven(ctx context.Context, tenant, eventID, subscription string) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       letterKey(tenant, eventID, subscription),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		UpdateExpression:          aws.String("SET redriven_at = :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": attr.S(s.now().UTC().Format(timeLayout))},
	})
	if err != nil {
		return fmt.Errorf("mark dead letter of event %s for %s redriven: %w", eventID, subscription, err)
	}
	return nil
}

// MarkReplayed marks l (a tenant letter or a poison pill) as moved back
// for replay, like MarkRedriven.
func (s *Store) MarkReplayed(ctx context.Context, l Letter) error {
	key := letterKey(l.Tenant, l.EventID, l.Subscription)
	if l.Poison {
		key = poisonKey(l.At, l.MessageID)
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key,
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		UpdateExpression:          aws.String("SET redriven_at = :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": attr.S(s.now().UTC().Format(timeLayout))},
	})
	if err != nil {
		return fmt.Errorf("mark dead letter %s replayed: %w", l.Key(), err)
	}
	return nil
}

// encode adds l's attributes to item, the letter's key, and returns it:
// bounded (Bound) and with its TTL.
func encode(item map[string]types.AttributeValue, l Letter) map[string]types.AttributeValue {
	l = Bound(l)
	item["error"] = attr.S(l.Error)
	item["at"] = attr.S(l.At.UTC().Format(timeLayout))
	item[AttrTTL] = attr.N(l.At.Add(TTL).Unix())
	if l.Raw != nil {
		item["raw"] = &types.AttributeValueMemberB{Value: l.Raw}
		item["raw_size"] = attr.N(int64(l.RawSize))
		item["raw_sha256"] = attr.S(l.RawSHA256)
	}
	put := func(k, v string) {
		if v != "" {
			item[k] = attr.S(v)
		}
	}
	put("tenant", l.Tenant)
	put("event_id", l.EventID)
	put("type", l.EventType)
	put("subscription", l.Subscription)
	put("message_id", l.MessageID)
	put("group_id", l.GroupID)
	put("body", l.Body)
	if l.Attempts > 0 {
		item["attempts"] = attr.N(int64(l.Attempts))
	}
	if l.ReceiveCount > 0 {
		item["receive_count"] = attr.N(int64(l.ReceiveCount))
	}
	if l.Poison {
		item["poison"] = attr.Bool(true)
	}
	return item
}

func decode(item map[string]types.AttributeValue) Letter {
	l := Letter{
		Tenant:       attr.GetS(item, "tenant"),
		EventID:      attr.GetS(item, "event_id"),
		EventType:    attr.GetS(item, "type"),
		Subscription: attr.GetS(item, "subscription"),
		Error:        attr.GetS(item, "error"),
		MessageID:    attr.GetS(item, "message_id"),
		GroupID:      attr.GetS(item, "group_id"),
		Body:         attr.GetS(item, "body"),
		Attempts:     int(attr.GetN(item, "attempts")),
		ReceiveCount: int(attr.GetN(item, "receive_count")),
		Poison:       isPoisonPK(attr.GetS(item, attr.PK)),
		RawSHA256:    attr.GetS(item, "raw_sha256"),
		RawSize:      int(attr.GetN(item, "raw_size")),
	}
	if b, ok := item["raw"].(*types.AttributeValueMemberB); ok {
		l.Raw = b.Value
	}
	if ttl := attr.GetN(item, AttrTTL); ttl > 0 {
		l.ExpiresAt = time.Unix(ttl, 0).UTC()
	}
	l.At, _ = time.Parse(timeLayout, attr.GetS(item, "at"))
	l.RedrivenAt, _ = time.Parse(timeLayout, attr.GetS(item, "redriven_at"))
	if t, ok := strings.CutPrefix(attr.GetS(item, attr.PK), tenantPKPrefix); ok && l.Tenant == "" {
		l.Tenant = t
	}
	return l
}
