package engine

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/attr"
)

// Reason says why a chain is broken at ChainReport.FirstBadSeq.
type Reason string

// Why a chain can break.
const (
	// ReasonHashMismatch: the stored hash is not sha256(prev_hash || JCS(row)):
	// the row was changed after it was written.
	ReasonHashMismatch Reason = "hash_mismatch"
	// ReasonPrevHashMismatch: prev_hash is not the previous row's hash: a row
	// was replaced or rows were reordered.
	ReasonPrevHashMismatch Reason = "prev_hash_mismatch"
	// ReasonGap: a sequence number is missing: a row was deleted.
	ReasonGap Reason = "gap"
	// ReasonDuplicate: a sequence number appears twice (or the row's seq does
	// not match its sort key).
	ReasonDuplicate Reason = "duplicate"
	// ReasonMalformed: a row cannot be decoded.
	ReasonMalformed Reason = "malformed"
	// ReasonMissingHead: events exist but the head row does not.
	ReasonMissingHead Reason = "missing_head"
	// ReasonHeadAhead: the head names a later sequence than the log holds:
	// the newest rows were deleted.
	ReasonHeadAhead Reason = "head_ahead_of_log"
	// ReasonHeadBehind: the log holds rows beyond the head's last_seq.
	ReasonHeadBehind Reason = "head_behind_log"
	// ReasonHeadHashMismatch: the head's last_hash is not the last row's hash.
	ReasonHeadHashMismatch Reason = "head_hash_mismatch"
)

// ChainReport is the result of verifying one tenant's chain.
type ChainReport struct {
	Tenant string `json:"tenant"`
	// Events is how many event rows were checked.
	Events int `json:"events"`
	// HeadSeq is the head row's last_seq (0 without a head).
	HeadSeq uint64 `json:"head_seq"`
	// Intact is true when every hash, link and sequence checks out.
	Intact bool `json:"chain_intact"`
	// FirstBadSeq is the first sequence at fault when !Intact.
	FirstBadSeq uint64 `json:"first_bad_seq,omitempty"`
	// Reason and Detail say what is wrong at FirstBadSeq.
	Reason Reason `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Verifier verifies hash chains in an events table. It is safe for
// concurrent use.
type Verifier struct {
	client   DynamoDB
	table    string
	pageSize int32
}

// NewVerifier returns a Verifier reading table through client, pageSize
// rows per query (0 means 500).
func NewVerifier(client DynamoDB, table string, pageSize int32) *Verifier {
	if pageSize <= 0 {
		pageSize = 500
	}
	return &Verifier{client: client, table: table, pageSize: pageSize}
}

// VerifyChain verifies tenant's chain with the engine's table and client.
func (e *Engine) VerifyChain(ctx context.Context, tenant string) (ChainReport, error) {
	return NewVerifier(e.cfg.Client, e.cfg.EventsTable, 0).VerifyChain(ctx, tenant)
}

// VerifyChain streams tenant's log in pages (strongly consistent queries),
// recomputes every hash and compares the result with the head row. A
// broken chain is a report with Intact false, not an error; errors are
// for failed reads.
func (v *Verifier) VerifyChain(ctx context.Context, tenant string) (ChainReport, error) {
	rep := ChainReport{Tenant: tenant, Intact: true}
	head, err := readHead(ctx, v.client, v.table, tenant)
	if err != nil {
		return rep, err
	}
	rep.HeadSeq = head.Seq
	bad := func(seq uint64, r Reason, format string, args ...any) {
		rep.Intact, rep.FirstBadSeq, rep.Reason, rep.Detail = false, seq, r, fmt.Sprintf(format, args...)
	}
	var (
		last     uint64
		prevHash = Genesis
		start    map[string]types.AttributeValue
	)
	for rep.Intact {
		out, err := v.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(v.table),
			KeyConditionExpression:    aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": attr.S(EventPK(tenant))},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
			Limit:                     aws.Int32(v.pageSize),
		})
		if err != nil {
			return rep, fmt.Errorf("verify chain of tenant %q: query %s after seq %d: %w", tenant, v.table, last, err)
		}
		for _, item := range out.Items {
			rep.Events++
			expected := last + 1
			sk, _ := item[AttrSK].(*types.AttributeValueMemberS)
			env, err := DecodeItem(item)
			if err != nil {
				bad(expected, ReasonMalformed, "row %v: %v", sk, err)
				break
			}
			switch {
			case sk == nil || sk.Value != SeqSK(env.Seq):
				bad(expected, ReasonDuplicate, "row with sort key %v says seq %d", sk, env.Seq)
			case env.Seq <= last:
				bad(env.Seq, ReasonDuplicate, "seq %d after seq %d", env.Seq, last)
			case env.Seq > expected:
				bad(expected, ReasonGap, "seq %d missing: next row is seq %d", expected, env.Seq)
			case env.Tenant != tenant:
				bad(env.Seq, ReasonHashMismatch, "row names tenant %q", env.Tenant)
			case env.PrevHash != prevHash:
				bad(env.Seq, ReasonPrevHashMismatch, "prev_hash %.12s…; previous hash is %.12s…", env.PrevHash, prevHash)
			}
			if !rep.Intact {
				break
			}
			h, err := ChainHash(prevHash, env)
			if err != nil {
				bad(env.Seq, ReasonMalformed, "%v", err)
				break
			}
			if h != env.Hash {
				bad(env.Seq, ReasonHashMismatch, "stored hash %.12s…; recomputed %.12s…", env.Hash, h)
				break
			}
			last, prevHash = env.Seq, env.Hash
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	if !rep.Intact {
		return rep, nil
	}
	switch {
	case !head.Found && last > 0:
		bad(1, ReasonMissingHead, "%d events but no head row", last)
	case head.Seq > last:
		bad(last+1, ReasonHeadAhead, "head says last_seq %d; log ends at seq %d", head.Seq, last)
	case head.Seq < last:
		bad(head.Seq+1, ReasonHeadBehind, "head says last_seq %d; log holds seq %d", head.Seq, last)
	case head.Found && head.Hash != prevHash:
		bad(last, ReasonHeadHashMismatch, "head last_hash %.12s…; seq %d hash %.12s…", head.Hash, last, prevHash)
	}
	return rep, nil
}

// Tenants lists every tenant with a head row, by scanning the events table
// for head rows.
func (v *Verifier) Tenants(ctx context.Context) ([]string, error) {
	var (
		out   []string
		start map[string]types.AttributeValue
	)
	for {
		page, err := v.client.Scan(ctx, &dynamodb.ScanInput{
			TableName:                 aws.String(v.table),
			FilterExpression:          aws.String("sk = :head"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":head": attr.S(HeadSK)},
			ProjectionExpression:      aws.String("#tenant"),
			ExpressionAttributeNames:  map[string]string{"#tenant": AttrTenant},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("list tenants: scan %s: %w", v.table, err)
		}
		for _, item := range page.Items {
			if t, ok := item[AttrTenant].(*types.AttributeValueMemberS); ok {
				out = append(out, t.Value)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = page.LastEvaluatedKey
	}
}
