package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

// BatchGetter is the BatchGetItem call. A Verifier whose client has it
// reads heads 100 to a call (Heads); *dynamodb.Client has it.
type BatchGetter interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

var _ BatchGetter = (*dynamodb.Client)(nil)

// HeadTenantsFrom is one bounded stretch of a Scan of the heads index
// (HeadsIndex): it reads at most maxItems index items after cursor and
// returns their tenants and the cursor to go on from ("" at the start and
// at the end). The index holds one small item per tenant with a head, so a
// pass costs reads proportional to the tenants, not to the events; a
// tenant whose head row is missing is not in it (TenantsFrom, the scan of
// the whole table, finds those by their event rows).
func (v *Verifier) HeadTenantsFrom(ctx context.Context, cursor string, maxItems int) ([]string, string, error) {
	if maxItems <= 0 {
		return nil, "", fmt.Errorf("list tenants: maxItems %d must be positive", maxItems)
	}
	var start map[string]types.AttributeValue
	if cursor != "" {
		var k struct{ PK, SK, Tenant string }
		if err := json.Unmarshal([]byte(cursor), &k); err != nil || k.PK == "" {
			return nil, "", fmt.Errorf("list tenants: bad cursor %q", cursor)
		}
		// A cursor of the table scan (TenantsFrom, no Tenant) cannot go on
		// in the index: start the index from its beginning.
		if k.Tenant != "" {
			start = attr.Key(k.PK, k.SK)
			start[AttrHeadTenant] = attr.S(k.Tenant)
		}
	}
	var out []string
	for read := 0; read < maxItems; {
		page, err := v.client.Scan(ctx, &dynamodb.ScanInput{
			TableName:         aws.String(v.table),
			IndexName:         aws.String(HeadsIndex),
			ExclusiveStartKey: start,
			Limit:             aws.Int32(int32(min(maxItems-read, 1000))),
		})
		if err != nil {
			return nil, "", fmt.Errorf("list tenants: scan %s index %s: %w", v.table, HeadsIndex, err)
		}
		read += int(page.ScannedCount)
		for _, item := range page.Items {
			if t := attr.GetS(item, AttrHeadTenant); ValidTenant(t) && TenantOfPK(attr.GetS(item, AttrPK)) == t {
				out = append(out, t)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, "", nil
		}
		start = page.LastEvaluatedKey
		if page.ScannedCount == 0 {
			break
		}
	}
	next, err := json.Marshal(struct{ PK, SK, Tenant string }{attr.GetS(start, AttrPK), attr.GetS(start, AttrSK), attr.GetS(start, AttrHeadTenant)})
	if err != nil {
		return nil, "", err
	}
	return out, string(next), nil
}

// HeadTenants returns every tenant of the heads index, sorted (the whole
// index, HeadTenantsFrom until the end).
func (v *Verifier) HeadTenants(ctx context.Context) ([]string, error) {
	var (
		out    []string
		cursor string
	)
	for {
		found, next, err := v.HeadTenantsFrom(ctx, cursor, 10000)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
		if next == "" {
			slices.Sort(out)
			return slices.Compact(out), nil
		}
		cursor = next
	}
}

// Heads reads the head rows of tenants (strongly consistent): with
// BatchGetItem, 100 to a call, when the Verifier's client has it, else one
// GetItem each. A tenant without a head row maps to a Head whose Found is
// false.
func (v *Verifier) Heads(ctx context.Context, tenants []string) (map[string]Head, error) {
	out := make(map[string]Head, len(tenants))
	bg, ok := v.client.(BatchGetter)
	if !ok {
		for _, t := range tenants {
			h, err := readHead(ctx, v.client, v.table, t)
			if err != nil {
				return nil, err
			}
			out[t] = h
		}
		return out, nil
	}
	for _, t := range tenants {
		out[t] = Head{Hash: Genesis}
	}
	for rest := slices.Clone(tenants); len(rest) > 0; {
		batch := rest[:min(100, len(rest))]
		rest = rest[len(batch):]
		keys := make([]map[string]types.AttributeValue, len(batch))
		for i, t := range batch {
			keys[i] = headKey(t)
		}
		pending := map[string]types.KeysAndAttributes{v.table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
		for try := 0; len(pending) > 0; try++ {
			res, err := bg.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, fmt.Errorf("read heads from %s: %w", v.table, err)
			}
			for _, it := range res.Responses[v.table] {
				h, err := decodeHead(it)
				if err != nil {
					return nil, fmt.Errorf("head %s in %s: %w", attr.GetS(it, AttrPK), v.table, err)
				}
				out[TenantOfPK(attr.GetS(it, AttrPK))] = h
			}
			pending = res.UnprocessedKeys
			if len(pending) > 0 {
				if err := sleepCtx(ctx, time.Duration(min(try+1, 10))*20*time.Millisecond); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
