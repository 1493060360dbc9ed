package deadletter

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// UnmatchedPK is the partition of the per-type counters of events that
// reached the durable consumer and matched no subscription: delivered to
// nobody, which otherwise looks like success.
const UnmatchedPK = "UNMATCHED"

// CountUnmatched adds one to eventType's unmatched counter.
func (s *Store) CountUnmatched(ctx context.Context, eventType string) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      map[string]types.AttributeValue{"pk": sv(UnmatchedPK), "sk": sv(eventType)},
		UpdateExpression:         aws.String("ADD #n :one SET #at = :now"),
		ExpressionAttributeNames: map[string]string{"#n": "count", "#at": "at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": nv(1), ":now": sv(s.now().UTC().Format(timeLayout)),
		},
	})
	if err != nil {
		return fmt.Errorf("count unmatched %s: %w", eventType, err)
	}
	return nil
}

// Unmatched returns the unmatched counters by event type.
func (s *Store) Unmatched(ctx context.Context) (map[string]int, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": sv(UnmatchedPK)},
	}
	out := map[string]int{}
	for {
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("query unmatched counters: %w", err)
		}
		for _, it := range page.Items {
			out[getS(it, "sk")] += getN(it, "count")
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
