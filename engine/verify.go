package engine

import (
	"cmp"
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
	return v.verify(ctx, tenant, from, limit, nil)
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
	pts := make([]ChainPoint, 0, len(points))
	for _, p := range points {
		if p.Seq > 0 {
			pts = append(pts, p)
		}
	}
	slices.SortFunc(pts, func(a, b ChainPoint) int { return cmp.Compare(a.Seq, b.Seq) })
	return v.verify(ctx, tenant, GenesisPoint, 0, pts)
}

func (v *Verifier) verify(ctx context.Context, tenant string, from ChainPoint, limit int, points []ChainPoint) (ChainReport, error) {
	rep := ChainReport{Tenant: tenant, Intact: true, Verified: from}
	if len(points) > 0 {
		rep.AnchoredSeq = points[len(points)-1].Seq
	}
	var matched uint64 // the newest point that still matches
	if from.Hash == "" {
		from.Hash = Genesis
		rep.Verified.Hash = Genesis
	}
	head, err := readHead(ctx, v.client, v.table, tenant)
	if err != nil {
		return rep, err
	}
	rep.HeadSeq = head.Seq
	bad := func(seq uint64, r Reason, format string, args ...any) {
		rep.Intact, rep.FirstBadSeq, rep.Reason, rep.Detail = false, seq, r, fmt.Sprintf(format, args...)
	}
	var (
		last     = from.Seq
		prevHash = from.Hash
		start    map[string]types.AttributeValue
		// anchor: the row at from.Seq is read first and only compared.
		anchor = from.Seq > 0
		cond   = "pk = :pk"
		vals   = map[string]types.AttributeValue{":pk": attr.S(EventPK(tenant))}
	)
	if anchor {
		cond += " AND sk >= :from"
		vals[":from"] = attr.S(SeqSK(from.Seq))
	}
	for rep.Intact && !rep.Partial {
		page := v.pageSize
		if limit > 0 {
			want := limit - rep.Events
			if anchor {
				want++
			}
			page = int32(min(int(page), want+1)) // +1: see whether the log goes on
		}
		out, err := v.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(v.table),
			KeyConditionExpression:    aws.String(cond),
			ExpressionAttributeValues: vals,
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
			Limit:                     aws.Int32(page),
		})
		if err != nil {
			return rep, fmt.Errorf("verify chain of tenant %q: query %s after seq %d: %w", tenant, v.table, last, err)
		}
		for _, item := range out.Items {
			sk, _ := item[AttrSK].(*types.AttributeValueMemberS)
			env, err := DecodeItem(item)
			if anchor {
				anchor = false
				switch {
				case err != nil:
					bad(from.Seq, ReasonMalformed, "checkpoint row %v: %v", sk, err)
				case env.Seq != from.Seq || sk == nil || sk.Value != SeqSK(from.Seq):
					bad(from.Seq, ReasonGap, "checkpoint seq %d missing: next row is seq %d", from.Seq, env.Seq)
				case env.Hash != from.Hash:
					bad(from.Seq, ReasonHashMismatch, "stored hash %.12s…; verified as %.12s…", env.Hash, from.Hash)
				default:
					if h, herr := ChainHash(env.PrevHash, env); herr != nil || h != env.Hash {
						bad(from.Seq, ReasonHashMismatch, "checkpoint row no longer hashes to its stored hash")
					}
				}
				if !rep.Intact {
					break
				}
				continue
			}
			if limit > 0 && rep.Events == limit {
				rep.Partial = true
				break
			}
			rep.Events++
			expected := last + 1
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
			for len(points) > 0 && points[0].Seq <= env.Seq && rep.Intact {
				if p := points[0]; p.Seq == env.Seq {
					rep.Anchors++
					if p.Hash != env.Hash {
						bad(env.Seq, ReasonAnchorMismatch, "anchored hash %.12s…; row now %.12s…: rewritten and resealed after seq %d, at or before seq %d", p.Hash, env.Hash, matched, env.Seq)
					}
					matched = p.Seq
				}
				points = points[1:]
			}
			if !rep.Intact {
				break
			}
			last, prevHash = env.Seq, env.Hash
			rep.Verified = ChainPoint{Seq: last, Hash: prevHash}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	if anchor && rep.Intact {
		bad(from.Seq, ReasonGap, "checkpoint seq %d is no longer in the log", from.Seq)
	}
	if !rep.Intact || rep.Partial {
		return rep, nil
	}
	if len(points) > 0 {
		// Anchors are read before the log and the log only grows, so an
		// anchored seq past its end means rows were removed.
		bad(last+1, ReasonAnchorAhead, "anchored seq %d (hash %.12s…); log ends at seq %d", points[0].Seq, points[0].Hash, last)
		return rep, nil
	}
	if head.Seq < last {
		// Events committed after the head was read; read it again.
		if head, err = readHead(ctx, v.client, v.table, tenant); err != nil {
			return rep, err
		}
		rep.HeadSeq = head.Seq
		if head.Seq > last {
			return rep, nil // and more since: nothing to compare the head with
		}
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
