package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CheckpointAPI is the part of the DynamoDB client checkpoints use.
type CheckpointAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ CheckpointAPI = (*dynamodb.Client)(nil)

// checkpoint is a shard's durable position: the last sequence number whose
// message SQS accepted, and whether the shard was read to its end.
type checkpoint struct {
	Sequence string
	Closed   bool
}

type checkpoints struct {
	client CheckpointAPI
	table  string
	pipe   string
	stream string
}

// CheckpointKey is the inbox-table key of a pipe's position in one shard.
func CheckpointKey(pipe, streamARN, shardID string) string {
	return "RELAY#" + pipe + "#" + streamARN + "#" + shardID
}

func (c *checkpoints) key(shard string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: CheckpointKey(c.pipe, c.stream, shard)}}
}

func (c *checkpoints) load(ctx context.Context, shard string) (checkpoint, error) {
	out, err := c.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: c.key(shard), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return checkpoint{}, fmt.Errorf("load checkpoint of shard %s: %w", shard, err)
	}
	var cp checkpoint
	if v, ok := out.Item["seq"].(*types.AttributeValueMemberS); ok {
		cp.Sequence = v.Value
	}
	if v, ok := out.Item["closed"].(*types.AttributeValueMemberBOOL); ok {
		cp.Closed = v.Value
	}
	return cp, nil
}

func (c *checkpoints) save(ctx context.Context, shard string, cp checkpoint) error {
	item := c.key(shard)
	item["closed"] = &types.AttributeValueMemberBOOL{Value: cp.Closed}
	item["updated_at"] = &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339Nano)}
	if cp.Sequence != "" {
		item["seq"] = &types.AttributeValueMemberS{Value: cp.Sequence}
	}
	if _, err := c.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: item}); err != nil {
		return fmt.Errorf("save checkpoint of shard %s at %s: %w", shard, cp.Sequence, err)
	}
	return nil
}
