package deadletter

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

// CountUnmatched adds one to eventType's unmatched counter.
func (s *Store) CountUnmatched(ctx context.Context, eventType string) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      attr.Key(UnmatchedPK, eventType),
		UpdateExpression:         aws.String("ADD #n :one SET #at = :now"),
		ExpressionAttributeNames: map[string]string{"#n": "count", "#at": "at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": attr.N(1), ":now": attr.S(s.now().UTC().Format(timeLayout)),
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
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": attr.S(UnmatchedPK)},
	}
	out := map[string]int{}
	for {
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("query unmatched counters: %w", err)
		}
		for _, it := range page.Items {
			out[attr.GetS(it, attr.SK)] += int(attr.GetN(it, "count"))
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
