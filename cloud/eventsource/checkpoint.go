package eventsource

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

// The checkpoint row (docs/tables.md lists every table's rows).
//
// Table: Config.CheckpointTable, the inbox table (pk only; its TTL
// attribute "ttl" is never set on these rows). One row per mapping, stream
// and shard:
//
//	pk = "ESM#<mapping>#<stream name>#<shard id>"   (CheckpointKey)
//	seq         S     the last sequence number handled (or sent to the on-failure queue); absent before the first
//	closed      BOOL  the shard was read to its end and every record of it handled
//	updated_at  S     RFC 3339 with nanoseconds
//
// A plain PutItem, written only after the handler succeeded for every
// record up to seq. Read and written by the Runner of that mapping alone.
// Lambda keeps its own position in AWS; these rows exist locally only.
const (
	keyPrefix     = "ESM#"
	attrSeq       = "seq"
	attrClosed    = "closed"
	attrUpdatedAt = "updated_at"
)

// CheckpointKey is the inbox-table key of a mapping's position in one shard.
func CheckpointKey(mapping, stream, shardID string) string {
	return keyPrefix + mapping + "#" + stream + "#" + shardID
}

// CheckpointAPI is the part of the DynamoDB client checkpoints use.
type CheckpointAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ CheckpointAPI = (*dynamodb.Client)(nil)

type checkpoint struct {
	Sequence string
	Closed   bool
}

type checkpoints struct {
	client  CheckpointAPI
	table   string
	mapping string
	stream  string
}

func (c *checkpoints) key(shard string) map[string]types.AttributeValue {
	return attr.HashKey(CheckpointKey(c.mapping, c.stream, shard))
}

func (c *checkpoints) load(ctx context.Context, shard string) (checkpoint, error) {
	out, err := c.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: c.key(shard), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return checkpoint{}, fmt.Errorf("load checkpoint of shard %s: %w", shard, err)
	}
	cp := checkpoint{Sequence: attr.GetS(out.Item, attrSeq)}
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
