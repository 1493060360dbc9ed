package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

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
	// ReasonAnchorMismatch: the chain checks out by itself, but the row at
	// an anchored sequence (VerifyAgainst) no longer carries the anchored
	// hash: the log was rewritten at or before that sequence and every
	// later hash and the head recomputed.
	ReasonAnchorMismatch Reason = "anchor_mismatch"
	// ReasonAnchorAhead: an anchored sequence is beyond the end of the log:
	// its newest rows were deleted and the head rewritten to match.
	ReasonAnchorAhead Reason = "anchor_ahead_of_log"
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
	// Verified is the last position that checked out: where the next
	// VerifyFrom can start.
	Verified ChainPoint `json:"verified"`
	// Partial is true when VerifyFrom stopped at its row limit before the
	// end of the log; the head was then not compared.
	Partial bool `json:"partial,omitempty"`
	// Anchors is how many anchored positions VerifyAgainst compared, and
	// AnchoredSeq the newest of them (0 without anchors).
	Anchors     int    `json:"anchors_checked,omitempty"`
	AnchoredSeq uint64 `json:"anchored_seq,omitempty"`
}

// ChainPoint is a position in a tenant's chain: the sequence and hash of
// an event row (0 and Genesis before the first event).
type ChainPoint struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// GenesisPoint is the position before a tenant's first event.
var GenesisPoint = ChainPoint{Seq: 0, Hash: Genesis}

// Verifier verifies hash chains in an events table: it reads a tenant's
// log with a Log and checks it with the steps of CheckChain. It also finds
// the tenants (Tenants, HeadTenants) and reads heads in bulk (Heads). It
// is safe for concurrent use.
type Verifier struct {
	client   DynamoDB
	table    string
	pageSize int
	log      *Log
}

// NewVerifier returns a Verifier reading table through client, pageSize
// rows per query (0 means 500).
func NewVerifier(client DynamoDB, table string, pageSize int32) *Verifier {
	if pageSize <= 0 {
		pageSize = 500
	}
	return &Verifier{client: client, table: table, pageSize: int(pageSize), log: NewLog(client, table)}
}

// VerifyChain verifies tenant's chain with the engine's table and client.
func (e *Engine) VerifyChain(ctx context.Context, tenant string) (ChainReport, error) {
	return NewVerifier(e.cfg.Client, e.cfg.EventsTable, 0).VerifyChain(ctx, tenant)
}

// VerifyChain streams tenant's whole log in pages (strongly consistent
// queries), recomputes every hash and compares the result with the head
// row. A broken chain is a report with Intact false, not an error; errors
// are for failed reads.
func (v *Verifier) VerifyChain(ctx context.Context, tenant string) (ChainReport, error) {
	return v.VerifyFrom(ctx, tenant, GenesisPoint, 0)
}

// VerifyFrom verifies tenant's chain after from, a position an earlier
// verification returned (ChainReport.Verified): it checks that the row at
// from.Seq still carries from.Hash and still hashes to it, then every later
// row as VerifyChain does, reading at most limit of them (0: no limit).
// When it reaches the end of the log it compares the head row; when it
// stops at the limit the report is Partial and Verified says where to go
// on. Rows up to from.Seq are trusted, not re-read: a full check is
// VerifyChain.
//
// Rows emitted while it reads are not a break: a log longer than the head
// read first is compared with the head read again.
func (v *Verifier) VerifyFrom(ctx context.Context, tenant string, from ChainPoint, limit int) (ChainReport, error) {
	return v.verify(ctx, ChainCheck{Tenant: tenant, From: from, Limit: limit})
}

// VerifyAgainst verifies tenant's whole chain as VerifyChain does and also
// that it still passes through every one of points: positions recorded
// earlier somewhere a writer of the events table cannot change (the
// anchors of engine/anchor). A chain that checks out by itself can still
// have been rewritten and resealed (a row changed, every later hash and
// the head recomputed); the first point whose row now carries another hash
// is then reported as ReasonAnchorMismatch, and a point beyond the end of
// the log as ReasonAnchorAhead. points may be in any order; a point at seq
// 0 is ignored.
func (v *Verifier) VerifyAgainst(ctx context.Context, tenant string, points []ChainPoint) (ChainReport, error) {
	return v.verify(ctx, ChainCheck{Tenant: tenant, From: GenesisPoint, Anchors: points})
}

// verify reads the head, walks the log after c.From through the chain
// check, reads the head again when events were committed meanwhile, and
// compares the head with the end of the log.
func (v *Verifier) verify(ctx context.Context, c ChainCheck) (ChainReport, error) {
	w := newChainWalk(c)
	head, err := v.log.Head(ctx, c.Tenant)
	if err != nil {
		return w.rep, err
	}
	w.rep.HeadSeq = head.Seq
	if err := w.walk(v.log.After(ctx, c.Tenant, w.readAfter(), ReadOptions{Limit: w.readLimit(), PageSize: v.pageSize})); err != nil {
		return w.rep, fmt.Errorf("verify chain of tenant %q: %w", c.Tenant, err)
	}
	if w.headStale(head) {
		// Events committed after the head was read; read it again.
		if head, err = v.log.Head(ctx, c.Tenant); err != nil {
			return w.rep, err
		}
		if head.Seq > w.last {
			w.rep.HeadSeq = head.Seq
			return w.rep, nil // and more since: nothing to compare the head with
		}
	}
	return w.finish(head), nil
}

// Tenants lists every tenant with a head row or an event row, by scanning
// the events table. It does not depend on head rows alone: a tenant whose
// head was deleted is still found through its event rows, which no role
// may delete (docs/chain.md, "Finding every tenant").
func (v *Verifier) Tenants(ctx context.Context) ([]string, error) {
	var (
		out    []string
		cursor string
	)
	for {
		found, next, err := v.TenantsFrom(ctx, cursor, 10000)
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

// TenantOfPK returns the tenant of an events-table partition key (a head
// or event row's), or "" for any other key.
func TenantOfPK(pk string) string {
	rest, ok := strings.CutPrefix(pk, tenantPKPrefix)
	if !ok {
		return ""
	}
	if t, ok := strings.CutSuffix(rest, EventPKSuffix); ok && ValidTenant(t) {
		return t
	}
	if t, ok := strings.CutSuffix(rest, HeadPKSuffix); ok && ValidTenant(t) {
		return t
	}
	return ""
}

// TenantsFrom is one bounded stretch of the scan Tenants makes: it reads
// at most maxItems items of the events table (head and event rows alike:
// a Scan pays for every item it reads, whatever it returns) after cursor,
// and returns the tenants of the head and event rows among them (each
// once) and the cursor to go on from. The cursor is "" at the start and
// when the scan has reached the end of the table; it is opaque otherwise.
func (v *Verifier) TenantsFrom(ctx context.Context, cursor string, maxItems int) ([]string, string, error) {
	if maxItems <= 0 {
		return nil, "", fmt.Errorf("list tenants: maxItems %d must be positive", maxItems)
	}
	var start map[string]types.AttributeValue
	if cursor != "" {
		var k struct{ PK, SK string }
		if err := json.Unmarshal([]byte(cursor), &k); err != nil || k.PK == "" {
			return nil, "", fmt.Errorf("list tenants: bad cursor %q", cursor)
		}
		start = attr.Key(k.PK, k.SK)
	}
	var (
		out  []string
		seen = map[string]bool{}
	)
	for read := 0; read < maxItems; {
		page, err := v.client.Scan(ctx, &dynamodb.ScanInput{
			TableName:                aws.String(v.table),
			ProjectionExpression:     aws.String("#pk"),
			ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
			ExclusiveStartKey:        start,
			Limit:                    aws.Int32(int32(min(maxItems-read, 1000))),
		})
		if err != nil {
			return nil, "", fmt.Errorf("list tenants: scan %s: %w", v.table, err)
		}
		read += int(page.ScannedCount)
		for _, item := range page.Items {
			if t := TenantOfPK(attr.GetS(item, AttrPK)); t != "" && !seen[t] {
				seen[t] = true
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
	next, err := json.Marshal(struct{ PK, SK string }{attr.GetS(start, AttrPK), attr.GetS(start, AttrSK)})
	if err != nil {
		return nil, "", err
	}
	return out, string(next), nil
}
