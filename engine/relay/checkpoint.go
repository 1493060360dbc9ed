package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
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

func (c *checkpoints) key(shard string) map[string]types.AttributeValue {
	return attr.HashKey(CheckpointKey(c.pipe, c.stream, shard))
}

func (c *checkpoints) load(ctx context.Context, shard string) (checkpoint, error) {
	out, err := c.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: c.key(shard), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return checkpoint{}, fmt.Errorf("load checkpoint of shard %s: %w", shard, err)
	}
	var cp checkpoint
	cp.Sequence = attr.GetS(out.Item, attrSeq)
	if v, ok := out.Item[attrClosed].(*types.AttributeValueMemberBOOL); ok {
		cp.Closed = v.Value
	}
	return cp, nil
}

func (c *checkpoints) save(ctx context.Context, shard string, cp checkpoint) error {
	item := c.key(shard)
	item[attrClosed] = attr.Bool(cp.Closed)
	item[attrUpdatedAt] = attr.S(time.Now().UTC().Format(time.RFC3339Nano))
	if cp.Sequence != "" {
		item[attrSeq] = attr.S(cp.Sequence)
	}
	if _, err := c.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: item}); err != nil {
		return fmt.Errorf("save checkpoint of shard %s at %s: %w", shard, cp.Sequence, err)
	}
	return nil
}
