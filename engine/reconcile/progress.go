package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
)

// ProgressDB is the part of the DynamoDB API Progress uses.
type ProgressDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

var _ ProgressDB = (*dynamodb.Client)(nil)

// Progress keeps what reconcile has already checked, in rows of Table
// (the inbox table; keys.go lists them): per tenant, how far its chain is
// verified and its work settled; and the tenants the discovery scan has
// found. Every write is conditional on the value it read, so concurrent
// calls never move a position back; a call that loses the race keeps its
// report and drops its write. It is safe for concurrent use.
type Progress struct {
	DB    ProgressDB
	Table string
}

// Validate checks the required fields.
func (p Progress) Validate() error {
	if p.DB == nil || p.Table == "" {
		return errors.New("reconcile progress: DB and Table are required")
	}
	return nil
}

// TenantProgress is one tenant's row.
type TenantProgress struct {
	// Chain is the last verified position (engine.GenesisPoint before any).
	Chain engine.ChainPoint
	// Settled: every event up to this seq is settled or listed in Open.
	Settled uint64
	// Open are the inbox keys of pairs found unsettled.
	Open []string
	rev  int64
}

// Load reads tenant's progress; a tenant never reconciled starts at
// genesis with nothing settled.
func (p Progress) Load(ctx context.Context, tenant string) (TenantProgress, error) {
	out, err := p.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(p.Table), Key: attr.HashKey(tenantKey(tenant)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return TenantProgress{}, fmt.Errorf("read reconcile progress of tenant %q: %w", tenant, err)
	}
	tp := TenantProgress{Chain: engine.GenesisPoint}
	it := out.Item
	if it == nil {
		return tp, nil
	}
	if h := attr.GetS(it, attrChainHash); h != "" {
		tp.Chain = engine.ChainPoint{Seq: uint64(attr.GetN(it, attrChainSeq)), Hash: h}
	}
	tp.Settled = uint64(attr.GetN(it, attrSettledSeq))
	tp.rev = attr.GetN(it, attrSettleRev)
	if l, ok := it[attrOpen].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				tp.Open = append(tp.Open, s.Value)
			}
		}
	}
	return tp, nil
}

// SaveChain moves tenant's verified position from from to to. It reports
// false, with no error, when another call moved it first.
func (p Progress) SaveChain(ctx context.Context, tenant string, from, to engine.ChainPoint) (bool, error) {
	return p.update(ctx, tenantKey(tenant), "chain position of tenant "+tenant,
		"SET #seq = :to, #hash = :hash, #at = :now",
		"attribute_not_exists(#seq) OR #seq = :from",
		map[string]string{"#seq": attrChainSeq, "#hash": attrChainHash, "#at": attrUpdatedAt},
		map[string]types.AttributeValue{":to": attr.Uint(to.Seq), ":hash": attr.S(to.Hash), ":from": attr.Uint(from.Seq)})
}

// SaveSettled replaces tenant's settled position and open pairs, read as
// old. It reports false when another call wrote them first.
func (p Progress) SaveSettled(ctx context.Context, tenant string, old TenantProgress, settled uint64, open []string) (bool, error) {
	l := make([]types.AttributeValue, len(open))
	for i, k := range open {
		l[i] = attr.S(k)
	}
	return p.update(ctx, tenantKey(tenant), "settled position of tenant "+tenant,
		"SET #settled = :settled, #open = :open, #rev = :next, #at = :now",
		"attribute_not_exists(#rev) OR #rev = :rev",
		map[string]string{"#settled": attrSettledSeq, "#open": attrOpen, "#rev": attrSettleRev, "#at": attrUpdatedAt},
		map[string]types.AttributeValue{":settled": attr.Uint(settled), ":open": &types.AttributeValueMemberL{Value: l},
			":rev": attr.N(old.rev), ":next": attr.N(old.rev + 1)})
}

// Registry is the tenants found so far and where the discovery scan goes
// on.
type Registry struct {
	Tenants []string
	// Cursor is where the next stretch of the scan starts ("" at the
	// beginning); Cycles counts completed passes over the events table.
	Cursor string
	Cycles int
	rev    int64
}

// Registry reads the registry shards and the scan row in one
// BatchGetItem.
func (p Progress) Registry(ctx context.Context) (Registry, error) {
	keys := make([]map[string]types.AttributeValue, 0, registryShards+1)
	for i := range registryShards {
		keys = append(keys, attr.HashKey(registryKey(i)))
	}
	keys = append(keys, attr.HashKey(scanKey()))
	items, err := batchGet(ctx, p.DB, p.Table, keys, "")
	if err != nil {
		return Registry{}, fmt.Errorf("read reconcile tenant registry: %w", err)
	}
	var r Registry
	for _, it := range items {
		if attr.GetS(it, attr.PK) == scanKey() {
			r.Cursor, r.Cycles, r.rev = attr.GetS(it, attrCursor), int(attr.GetN(it, attrCycles)), attr.GetN(it, attrRev)
			continue
		}
		if ss, ok := it[attrTenants].(*types.AttributeValueMemberSS); ok {
			r.Tenants = append(r.Tenants, ss.Value...)
		}
	}
	slices.Sort(r.Tenants)
	r.Tenants = slices.Compact(r.Tenants)
	return r, nil
}

// AddTenants adds tenants to the registry (a set union: concurrent adds
// are safe).
func (p Progress) AddTenants(ctx context.Context, tenants []string) error {
	shards := map[int][]string{}
	for _, t := range tenants {
		shards[shardOf(t)] = append(shards[shardOf(t)], t)
	}
	for shard, ts := range shards {
		_, err := p.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(p.Table),
			Key:                       attr.HashKey(registryKey(shard)),
			UpdateExpression:          aws.String("ADD #tenants :ts SET #at = :now"),
			ExpressionAttributeNames:  map[string]string{"#tenants": attrTenants, "#at": attrUpdatedAt},
			ExpressionAttributeValues: map[string]types.AttributeValue{":ts": attr.SS(ts...), ":now": attr.S(time.Now().UTC().Format(time.RFC3339))},
		})
		if err != nil {
			return fmt.Errorf("add tenants to reconcile registry: %w", err)
		}
	}
	return nil
}

// SaveScan moves the discovery scan from old's cursor to next, counting a
// completed pass when the scan reached the end. It reports false when
// another call moved it first.
func (p Progress) SaveScan(ctx context.Context, old Registry, next string, completed bool) (bool, error) {
	cycles := old.Cycles
	if completed {
		cycles++
	}
	update := "SET #cursor = :cursor, #cycles = :cycles, #rev = :next, #at = :now"
	vals := map[string]types.AttributeValue{":cursor": attr.S(next), ":cycles": attr.N(int64(cycles)), ":rev": attr.N(old.rev), ":next": attr.N(old.rev + 1)}
	if next == "" {
		update = "SET #cycles = :cycles, #rev = :next, #at = :now REMOVE #cursor"
		delete(vals, ":cursor")
	}
	return p.update(ctx, scanKey(), "reconcile tenant scan", update, "attribute_not_exists(#rev) OR #rev = :rev",
		map[string]string{"#cursor": attrCursor, "#cycles": attrCycles, "#rev": attrRev, "#at": attrUpdatedAt}, vals)
}

func (p Progress) update(ctx context.Context, key, what, update, cond string, names map[string]string, vals map[string]types.AttributeValue) (bool, error) {
	vals[":now"] = attr.S(time.Now().UTC().Format(time.RFC3339))
	used := map[string]string{}
	for k, v := range names {
		if strings.Contains(update, k) || strings.Contains(cond, k) {
			used[k] = v
		}
	}
	_, err := p.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(p.Table), Key: attr.HashKey(key),
		UpdateExpression: aws.String(update), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: used, ExpressionAttributeValues: vals,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return false, nil
		}
		return false, fmt.Errorf("save %s: %w", what, err)
	}
	return true, nil
}

// batchGet reads keys from table in batches of 100, retrying unprocessed
// keys with a short backoff; projection, when set, limits the attributes.
func batchGet(ctx context.Context, db interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}, table string, keys []map[string]types.AttributeValue, projection string, names ...string) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	for len(keys) > 0 {
		batch := keys[:min(100, len(keys))]
		keys = keys[len(batch):]
		ka := types.KeysAndAttributes{Keys: batch, ConsistentRead: aws.Bool(true)}
		if projection != "" {
			ka.ProjectionExpression = aws.String(projection)
			ka.ExpressionAttributeNames = map[string]string{}
			for i := 0; i+1 < len(names); i += 2 {
				ka.ExpressionAttributeNames[names[i]] = names[i+1]
			}
		}
		pending := map[string]types.KeysAndAttributes{table: ka}
		for attempt := 0; len(pending) > 0; attempt++ {
			res, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, err
			}
			out = append(out, res.Responses[table]...)
			pending = res.UnprocessedKeys
			if len(pending) > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Duration(min(attempt+1, 10)) * 50 * time.Millisecond):
				}
			}
		}
	}
	return out, nil
}

// seqOf parses a 20-digit sort key.
func seqOf(sk string) uint64 {
	n, _ := strconv.ParseUint(sk, 10, 64)
	return n
}
