package engine

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Head is a tenant's chain head row.
type Head struct {
	// Found is false when the tenant has no head row (no events yet).
	Found bool
	// Seq is the last committed sequence (last_seq), 0 without events.
	Seq uint64
	// Hash is the last committed hash (last_hash), Genesis without events.
	Hash string
}

func (e *Engine) head(ctx context.Context, tenant string) (Head, error) {
	return readHead(ctx, e.cfg.Client, e.cfg.EventsTable, tenant)
}

func readHead(ctx context.Context, client LogDB, table, tenant string) (Head, error) {
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            headKey(tenant),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Head{}, fmt.Errorf("read head of tenant %q from %s: %w", tenant, table, err)
	}
	if out.Item == nil {
		return Head{Hash: Genesis}, nil
	}
	h, err := decodeHead(out.Item)
	if err != nil {
		return Head{}, fmt.Errorf("head of tenant %q in %s: %w", tenant, table, err)
	}
	return h, nil
}

// decodeHead reads last_seq and last_hash of a head row.
func decodeHead(item map[string]types.AttributeValue) (Head, error) {
	seqAV, ok1 := item[AttrLastSeq].(*types.AttributeValueMemberN)
	hashAV, ok2 := item[AttrLastHash].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return Head{}, fmt.Errorf("%s or %s missing: %w", AttrLastSeq, AttrLastHash, ErrBadRow)
	}
	seq, err := strconv.ParseUint(seqAV.Value, 10, 64)
	if err != nil {
		return Head{}, fmt.Errorf("%s %q: %w: %w", AttrLastSeq, seqAV.Value, ErrBadRow, err)
	}
	return Head{Found: true, Seq: seq, Hash: hashAV.Value}, nil
}
