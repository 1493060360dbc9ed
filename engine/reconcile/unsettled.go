package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// InboxDB is the part of the DynamoDB API the unsettled-work check reads
// with.
type InboxDB interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

var _ InboxDB = (*dynamodb.Client)(nil)

// InboxCheck finds DURABLE work that never settled: (event, subscription)
// pairs older than Grace whose inbox row is absent or still pending. Such
// work is neither done nor dead-lettered: it was lost or is stuck. It reads
// every event row of the tenant and its inbox rows, O(events) reads, so it
// is an operator's tool, not a health probe.
type InboxCheck struct {
	DB          InboxDB
	EventsTable string
	InboxTable  string
	// Subscriptions are the catalog's; the DURABLE ones define the work
	// each event owes.
	Subscriptions []engine.Subscription
	// Grace: events younger than this are in flight. Default 2 minutes.
	Grace time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// Validate checks the required fields.
func (c InboxCheck) Validate() error {
	if c.DB == nil || c.EventsTable == "" || c.InboxTable == "" {
		return errors.New("inbox check: DB, EventsTable and InboxTable are required")
	}
	if c.Grace < 0 {
		return fmt.Errorf("inbox check: grace %v must not be negative", c.Grace)
	}
	return nil
}

// Unsettled counts tenant's unsettled (event, subscription) pairs.
func (c InboxCheck) Unsettled(ctx context.Context, tenant string) (int, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	grace, now := c.Grace, c.Now
	if grace == 0 {
		grace = 2 * time.Minute
	}
	if now == nil {
		now = time.Now
	}
	cutoff := now().Add(-grace)
	var keys []string
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(c.EventsTable),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ProjectionExpression:      aws.String("id, #type, occurred_at"),
		ExpressionAttributeNames:  map[string]string{"#type": engine.AttrType},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": attr.S(engine.EventPK(tenant))},
	}
	for {
		out, err := c.DB.Query(ctx, in)
		if err != nil {
			return 0, fmt.Errorf("read events of tenant %q: %w", tenant, err)
		}
		for _, it := range out.Items {
			id, typ, at := attr.GetS(it, engine.AttrID), attr.GetS(it, engine.AttrType), attr.GetS(it, engine.AttrOccurredAt)
			if ts, err := time.Parse(engine.TimeLayout, at); err == nil && ts.After(cutoff) {
				continue
			}
			for _, s := range engine.Match(c.Subscriptions, engine.Durable, typ) {
				keys = append(keys, inbox.Key(id, s.Name))
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	settled, err := c.settled(ctx, keys)
	if err != nil {
		return 0, fmt.Errorf("read inbox rows of tenant %q: %w", tenant, err)
	}
	return len(keys) - settled, nil
}

// settled counts the keys whose inbox row is completed or dead.
func (c InboxCheck) settled(ctx context.Context, keys []string) (int, error) {
	n := 0
	for len(keys) > 0 {
		batch := keys[:min(100, len(keys))]
		keys = keys[len(batch):]
		req := make([]map[string]types.AttributeValue, len(batch))
		for i, k := range batch {
			req[i] = attr.HashKey(k)
		}
		pending := map[string]types.KeysAndAttributes{c.InboxTable: {
			Keys: req, ProjectionExpression: aws.String("pk, #status"),
			ExpressionAttributeNames: map[string]string{"#status": inbox.AttrStatus},
		}}
		for attempt := 0; len(pending) > 0; attempt++ {
			out, err := c.DB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return 0, err
			}
			for _, it := range out.Responses[c.InboxTable] {
				if s := attr.GetS(it, inbox.AttrStatus); s == string(inbox.Completed) || s == string(inbox.Dead) {
					n++
				}
			}
			pending = out.UnprocessedKeys
			if len(pending) > 0 {
				select {
				case <-ctx.Done():
					return 0, ctx.Err()
				case <-time.After(time.Duration(min(attempt+1, 10)) * 50 * time.Millisecond):
				}
			}
		}
	}
	return n, nil
}
