package seedinbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// The article's row: pk = IDEMP#<event_id>:<subscription> (inbox.Key, the
// same key as Bowline's inbox, in the same table), status
// pending | completed | dead, last_error, updated_at, and ttl seven days
// after the claim (the article's retention).
const (
	attrStatus    = inbox.AttrStatus
	attrLastError = "last_error"
	attrUpdatedAt = "updated_at"
	attrTTL       = "ttl"
	// TTL is how long the article keeps an idempotency row.
	TTL = 7 * 24 * time.Hour
)

// DynamoAPI is the part of the DynamoDB client the store uses; safe for
// concurrent use, as *dynamodb.Client is.
type DynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Store is the article's idempotency table.
type Store struct {
	client DynamoAPI
	table  string
	now    func() time.Time
}

// NewStore returns a Store on table; now defaults to time.Now.
func NewStore(client DynamoAPI, table string, now func() time.Time) (*Store, error) {
	if client == nil || table == "" {
		return nil, errors.New("seed inbox: client and table are required")
	}
	if now == nil {
		now = time.Now
	}
	return &Store{client: client, table: table, now: now}, nil
}

// Claim is the article's claim: a PutItem conditioned on
// attribute_not_exists(pk). It reports false, with no error, when any row
// exists, whatever its status: completed, pending or dead.
func (s *Store) Claim(ctx context.Context, eventID, subscription string) (bool, error) {
	key := inbox.Key(eventID, subscription)
	now := s.now()
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			attr.PK: attr.S(key), attrStatus: attr.S(string(inbox.Pending)),
			"event_id": attr.S(eventID), "subscription": attr.S(subscription),
			attrUpdatedAt: attr.S(now.UTC().Format(time.RFC3339Nano)), attrTTL: attr.N(now.Add(TTL).Unix()),
		},
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attr.PK},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("seed claim %s: %w", key, err)
	}
	return true, nil
}

// MarkCompleted sets the row completed.
func (s *Store) MarkCompleted(ctx context.Context, eventID, subscription string) error {
	return s.mark(ctx, eventID, subscription, inbox.Completed, "")
}

// MarkDead sets the row dead with the handler's error.
func (s *Store) MarkDead(ctx context.Context, eventID, subscription, reason string) error {
	return s.mark(ctx, eventID, subscription, inbox.Dead, reason)
}

func (s *Store) mark(ctx context.Context, eventID, subscription string, status inbox.Status, reason string) error {
	key := inbox.Key(eventID, subscription)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      attr.HashKey(key),
		UpdateExpression:         aws.String("SET #status = :status, #err = :err, #updated = :updated"),
		ExpressionAttributeNames: map[string]string{"#status": attrStatus, "#err": attrLastError, "#updated": attrUpdatedAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":status": attr.S(string(status)), ":err": attr.S(reason),
			":updated": attr.S(s.now().UTC().Format(time.RFC3339Nano)),
		},
	})
	if err != nil {
		return fmt.Errorf("seed mark %s %s: %w", key, status, err)
	}
	return nil
}
