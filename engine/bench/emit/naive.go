package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
)

// errContention is the naive design's failure after its last retry.
var errContention = errors.New("head conflict after 5 retries")

// naive is the design as the article first describes it: every emit reads
// the head, writes head + event in one transaction conditioned on the
// last_seq it read, and retries up to five times when another emit won.
type naive struct {
	client engine.DynamoDB
	table  string
}

func (n naive) emit(ctx context.Context, tenant, typ string, payload map[string]any) error {
	const retries = 5
	for attempt := 0; attempt <= retries; attempt++ {
		head, err := n.head(ctx, tenant)
		if err != nil {
			return err
		}
		env := engine.Envelope{
			ID: ulid.Make().String(), Type: typ, Tenant: tenant, CorrelationID: "bench",
			Actor: "bench", OccurredAt: time.Now().UTC(), Payload: payload, Seq: head.seq + 1,
		}
		if err := engine.Seal(&env, head.hash); err != nil {
			return err
		}
		item, err := engine.EventItem(env)
		if err != nil {
			return err
		}
		update := &types.Update{
			TableName: aws.String(n.table),
			Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: engine.HeadPK(tenant)},
				"sk": &types.AttributeValueMemberS{Value: engine.HeadSK},
			},
			UpdateExpression: aws.String("SET last_seq = :next, last_hash = :hash, tenant = :tenant"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":next":   &types.AttributeValueMemberN{Value: strconv.FormatUint(env.Seq, 10)},
				":hash":   &types.AttributeValueMemberS{Value: env.Hash},
				":tenant": &types.AttributeValueMemberS{Value: tenant},
			},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}
		if head.seq > 0 {
			update.ConditionExpression = aws.String("last_seq = :prev")
			update.ExpressionAttributeValues[":prev"] = &types.AttributeValueMemberN{Value: strconv.FormatUint(head.seq, 10)}
		}
		_, err = n.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: update},
			{Put: &types.Put{TableName: aws.String(n.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		}})
		if err == nil {
			return nil
		}
		var tce *types.TransactionCanceledException
		var conflict *types.TransactionConflictException
		if !errors.As(err, &tce) && !errors.As(err, &conflict) {
			return err
		}
	}
	return errContention
}

type naiveHead struct {
	seq  uint64
	hash string
}

func (n naive) head(ctx context.Context, tenant string) (naiveHead, error) {
	out, err := n.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(n.table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: engine.HeadPK(tenant)},
			"sk": &types.AttributeValueMemberS{Value: engine.HeadSK},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return naiveHead{}, fmt.Errorf("read head of %s: %w", tenant, err)
	}
	if out.Item == nil {
		return naiveHead{hash: engine.Genesis}, nil
	}
	seq, _ := strconv.ParseUint(out.Item["last_seq"].(*types.AttributeValueMemberN).Value, 10, 64)
	return naiveHead{seq: seq, hash: out.Item["last_hash"].(*types.AttributeValueMemberS).Value}, nil
}
