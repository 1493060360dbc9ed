package anchor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
)

// Errors of this package.
var (
	// ErrConfig: a Config field is missing or invalid.
	ErrConfig = errors.New("anchor: invalid config")
	// ErrAnchorConflict: another anchor of the same tenant and seq exists
	// with a different hash: the chain changed between two anchor jobs.
	ErrAnchorConflict = errors.New("anchor: conflicting anchor")
)

// DynamoDB is the part of the DynamoDB API a Ledger uses on the anchors
// table. *dynamodb.Client satisfies it; it must be safe for concurrent use.
type DynamoDB interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

var _ DynamoDB = (*dynamodb.Client)(nil)

// Config configures a Ledger.
type Config struct {
	// Client reads and writes the anchors table. Required.
	Client DynamoDB
	// Table is the anchors table (resources.Names.AnchorsTable). Required.
	Table string
	// Chains reads the events table. Required.
	Chains *engine.Verifier
	// Logger receives one line per anchor written and per broken chain;
	// nil means slog.Default().
	Logger *slog.Logger
	// Now stamps anchored_at; nil means time.Now.
	Now func() time.Time
	// Observer is told about every round that completes (Metrics);
	// default NopObserver.
	Observer Observer
}

// setDefaults fills the zero fields with their defaults.
func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
}

// Validate reports the first missing field; it does not change c.
func (c Config) Validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrConfig)
	case c.Table == "":
		return fmt.Errorf("%w: Table is empty", ErrConfig)
	case c.Chains == nil:
		return fmt.Errorf("%w: Chains is nil", ErrConfig)
	}
	return nil
}

// Ledger records and checks anchors. It is safe for concurrent use, and
// several anchor jobs may run at once: anchors are conditional puts.
type Ledger struct{ cfg Config }

// New fills cfg's defaults, validates it and returns a Ledger.
func New(cfg Config) (*Ledger, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Ledger{cfg: cfg}, nil
}

// Anchor is one recorded chain position of a tenant.
type Anchor struct {
	Tenant string            `json:"tenant"`
	Point  engine.ChainPoint `json:"point"`
	// PrevSeq is the seq of the anchor before it (0 for the first).
	PrevSeq    uint64    `json:"prev_seq"`
	AnchoredAt time.Time `json:"anchored_at"`
}

// Result is what AnchorTenant did for one tenant.
type Result struct {
	Tenant string `json:"tenant"`
	// Anchored is true when a new anchor was written at Point.
	Anchored bool `json:"anchored"`
	// Point is the tenant's newest anchor after the call (the zero point
	// when it has none).
	Point engine.ChainPoint `json:"point"`
	// Report is the verification from the previous anchor; when
	// !Report.Intact nothing was anchored.
	Report engine.ChainReport `json:"report"`
}

// Latest returns tenant's newest anchor; found is false when it has none.
func (l *Ledger) Latest(ctx context.Context, tenant string) (a Anchor, found bool, err error) {
	out, err := l.cfg.Client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(l.cfg.Table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": attr.S(AnchorPK(tenant))},
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(1),
	})
	if err != nil {
		return Anchor{}, false, fmt.Errorf("latest anchor of tenant %q: query %s: %w", tenant, l.cfg.Table, err)
	}
	if len(out.Items) == 0 {
		return Anchor{}, false, nil
	}
	a, err = decodeAnchor(out.Items[0])
	if err != nil {
		return Anchor{}, false, fmt.Errorf("latest anchor of tenant %q in %s: %w", tenant, l.cfg.Table, err)
	}
	return a, true, nil
}

// History returns every anchor of tenant in seq order.
func (l *Ledger) History(ctx context.Context, tenant string) ([]Anchor, error) {
	var (
		out   []Anchor
		start map[string]types.AttributeValue
	)
	for {
		page, err := l.cfg.Client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(l.cfg.Table),
			KeyConditionExpression:    aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": attr.S(AnchorPK(tenant))},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("anchors of tenant %q: query %s: %w", tenant, l.cfg.Table, err)
		}
		for _, it := range page.Items {
			a, err := decodeAnchor(it)
			if err != nil {
				return nil, fmt.Errorf("anchors of tenant %q in %s: %w", tenant, l.cfg.Table, err)
			}
			out = append(out, a)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = page.LastEvaluatedKey
	}
}

// Registered returns the tenants in the registry.
func (l *Ledger) Registered(ctx context.Context) ([]string, error) {
	var (
		out   []string
		start map[string]types.AttributeValue
	)
	for {
		page, err := l.cfg.Client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(l.cfg.Table),
			KeyConditionExpression:    aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": attr.S(RegistryPK)},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("tenant registry: query %s: %w", l.cfg.Table, err)
		}
		for _, it := range page.Items {
			if t := attr.GetS(it, attr.SK); t != "" {
				out = append(out, t)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = page.LastEvaluatedKey
	}
}

// Tenants returns every tenant the registry names or the events table
// holds a head or event row of, sorted, each once. A tenant whose head row
// was deleted is still found, through its event rows or the registry.
func (l *Ledger) Tenants(ctx context.Context) ([]string, error) {
	reg, err := l.Registered(ctx)
	if err != nil {
		return nil, err
	}
	found, err := l.cfg.Chains.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	all := append(reg, found...)
	slices.Sort(all)
	return slices.Compact(all), nil
}

// AnchorTenant verifies tenant's chain from its newest anchor and, when it
// is intact and has grown, anchors its last verified position. A broken
// chain is a Result whose Report is not intact, not an error; errors are
// for failed reads and writes and for ErrAnchorConflict.
func (l *Ledger) AnchorTenant(ctx context.Context, tenant string) (Result, error) {
	res := Result{Tenant: tenant}
	latest, found, err := l.Latest(ctx, tenant)
	if err != nil {
		return res, err
	}
	from := engine.GenesisPoint
	if found {
		from, res.Point = latest.Point, latest.Point
	}
	rep, err := l.cfg.Chains.VerifyFrom(ctx, tenant, from, 0)
	if err != nil {
		return res, err
	}
	res.Report = rep
	if !rep.Intact {
		l.cfg.Logger.Error("chain broken; not anchored", "tenant", tenant, "seq", rep.FirstBadSeq, "reason", rep.Reason, "detail", rep.Detail)
		return res, nil
	}
	if rep.Verified.Seq <= from.Seq {
		return res, nil
	}
	if !found {
		if err := l.register(ctx, tenant); err != nil {
			return res, err
		}
	}
	a := Anchor{Tenant: tenant, Point: rep.Verified, PrevSeq: from.Seq, AnchoredAt: l.cfg.Now().UTC()}
	if err := l.put(ctx, a); err != nil {
		return res, err
	}
	res.Anchored, res.Point = true, a.Point
	l.cfg.Logger.Info("anchored", "tenant", tenant, "seq", a.Point.Seq, "hash", a.Point.Hash)
	return res, nil
}

// put writes a on the condition that no anchor of its tenant and seq
// exists. One that does (another anchor job got there first) is fine if
// it names the same hash, and ErrAnchorConflict otherwise.
func (l *Ledger) put(ctx context.Context, a Anchor) error {
	item := anchorKey(a.Tenant, a.Point.Seq)
	item[attrTenant] = attr.S(a.Tenant)
	item[attrSeq] = attr.Uint(a.Point.Seq)
	item[attrHash] = attr.S(a.Point.Hash)
	item[attrPrevSeq] = attr.Uint(a.PrevSeq)
	item[attrAnchoredAt] = attr.S(a.AnchoredAt.Format(engine.TimeLayout))
	_, err := l.cfg.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(l.cfg.Table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if old := attr.GetS(ccf.Item, attrHash); old != a.Point.Hash {
			return fmt.Errorf("%w: tenant %q seq %d anchored as %.12s…; chain now says %.12s…", ErrAnchorConflict, a.Tenant, a.Point.Seq, old, a.Point.Hash)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("anchor tenant %q at seq %d: put %s: %w", a.Tenant, a.Point.Seq, l.cfg.Table, err)
	}
	return nil
}

// register adds tenant to the registry, once.
func (l *Ledger) register(ctx context.Context, tenant string) error {
	item := registryKey(tenant)
	item[attrTenant] = attr.S(tenant)
	item[attrRegisteredAt] = attr.S(l.cfg.Now().UTC().Format(engine.TimeLayout))
	_, err := l.cfg.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(l.cfg.Table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("register tenant %q: put %s: %w", tenant, l.cfg.Table, err)
	}
	return nil
}

// Verify verifies tenant's whole chain and checks that it still passes
// through every anchor of the tenant (engine.Verifier.VerifyAgainst). A
// rewrite that recomputed every later hash and the head is reported as
// engine.ReasonAnchorMismatch at the first anchor it changed; a log cut
// short below an anchor as engine.ReasonAnchorAhead.
func (l *Ledger) Verify(ctx context.Context, tenant string) (engine.ChainReport, error) {
	hist, err := l.History(ctx, tenant)
	if err != nil {
		return engine.ChainReport{Tenant: tenant}, err
	}
	points := make([]engine.ChainPoint, len(hist))
	for i, a := range hist {
		points[i] = a.Point
	}
	return l.cfg.Chains.VerifyAgainst(ctx, tenant, points)
}

// RoundReport is what Round did.
type RoundReport struct {
	Tenants   int `json:"tenants"`
	Anchored  int `json:"anchored"`
	Unchanged int `json:"unchanged"`
	// Broken are the chains that did not verify; they were not anchored.
	Broken []engine.ChainReport `json:"broken"`
	// Failed names the tenants whose anchoring failed, with the error.
	Failed  map[string]string `json:"failed,omitempty"`
	Elapsed time.Duration     `json:"elapsed_ns"`
}

// RoundTenants returns the tenants a Round looks at, sorted, each once:
// the registry's and the heads index's (engine.Verifier.HeadTenants). It
// reads no event row: its cost grows with the tenants, not with the log.
// A tenant whose head row is missing is in it only once registered (its
// first anchor); Tenants, which scans the whole log, finds it in any case.
func (l *Ledger) RoundTenants(ctx context.Context) ([]string, error) {
	reg, err := l.Registered(ctx)
	if err != nil {
		return nil, err
	}
	found, err := l.cfg.Chains.HeadTenants(ctx)
	if err != nil {
		return nil, err
	}
	all := append(reg, found...)
	slices.Sort(all)
	return slices.Compact(all), nil
}

// Round anchors every tenant of RoundTenants that changed since its
// newest anchor, once. It reads every head (BatchGetItem, 100 to a call)
// and the anchor at each head's seq (likewise); a tenant whose head is
// anchored with the head's hash is unchanged and costs nothing more. The
// others (grown, broken, headless, never anchored) go through
// AnchorTenant. So a round reads O(tenants/100) batches plus the work of
// the changed tenants, and no event row of an unchanged one
// (docs/chain.md, "Anchors"). It goes on past a tenant that fails and
// returns the failures in the report; the error is for failing to list
// tenants or read heads, or a cancelled ctx.
func (l *Ledger) Round(ctx context.Context) (RoundReport, error) {
	start := time.Now()
	rep := RoundReport{Broken: []engine.ChainReport{}}
	tenants, err := l.RoundTenants(ctx)
	if err != nil {
		return rep, err
	}
	rep.Tenants = len(tenants)
	heads, err := l.cfg.Chains.Heads(ctx, tenants)
	if err != nil {
		return rep, err
	}
	anchored, err := l.anchoredAtHeads(ctx, heads)
	if err != nil {
		return rep, err
	}
	for _, t := range tenants {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if h := heads[t]; h.Found && h.Seq > 0 && anchored[t] == h.Hash {
			rep.Unchanged++
			continue
		}
		res, err := l.AnchorTenant(ctx, t)
		switch {
		case err != nil:
			if rep.Failed == nil {
				rep.Failed = map[string]string{}
			}
			rep.Failed[t] = err.Error()
			l.cfg.Logger.Error("anchor failed", "tenant", t, "err", err)
		case !res.Report.Intact:
			rep.Broken = append(rep.Broken, res.Report)
		case res.Anchored:
			rep.Anchored++
		default:
			rep.Unchanged++
		}
	}
	rep.Elapsed = time.Since(start)
	l.cfg.Observer.RoundDone(rep, l.cfg.Now())
	return rep, nil
}

// anchoredAtHeads returns, for each tenant whose head has events, the hash
// of its anchor at the head's seq, when there is one.
func (l *Ledger) anchoredAtHeads(ctx context.Context, heads map[string]engine.Head) (map[string]string, error) {
	var keys []map[string]types.AttributeValue
	for t, h := range heads {
		if h.Found && h.Seq > 0 {
			keys = append(keys, anchorKey(t, h.Seq))
		}
	}
	out := make(map[string]string, len(keys))
	for len(keys) > 0 {
		batch := keys[:min(100, len(keys))]
		keys = keys[len(batch):]
		pending := map[string]types.KeysAndAttributes{l.cfg.Table: {
			Keys: batch, ConsistentRead: aws.Bool(true),
			ProjectionExpression: aws.String("#tenant, #hash"), ExpressionAttributeNames: map[string]string{"#tenant": attrTenant, "#hash": attrHash},
		}}
		for try := 1; len(pending) > 0; try++ {
			res, err := l.cfg.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, fmt.Errorf("anchors at the heads: batch get %s: %w", l.cfg.Table, err)
			}
			for _, it := range res.Responses[l.cfg.Table] {
				out[attr.GetS(it, attrTenant)] = attr.GetS(it, attrHash)
			}
			pending = res.UnprocessedKeys
			if len(pending) > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Duration(min(try, 10)) * 20 * time.Millisecond):
				}
			}
		}
	}
	return out, nil
}

func decodeAnchor(it map[string]types.AttributeValue) (Anchor, error) {
	a := Anchor{Tenant: attr.GetS(it, attrTenant), Point: engine.ChainPoint{Hash: attr.GetS(it, attrHash)}}
	seq, err := strconv.ParseUint(attr.GetS(it, attr.SK), 10, 64)
	if err != nil || a.Tenant == "" || len(a.Point.Hash) != len(engine.Genesis) {
		return Anchor{}, fmt.Errorf("malformed anchor row %s/%s", attr.GetS(it, attr.PK), attr.GetS(it, attr.SK))
	}
	a.Point.Seq = seq
	a.PrevSeq = uint64(max(attr.GetN(it, attrPrevSeq), 0))
	a.AnchoredAt, _ = time.Parse(engine.TimeLayout, attr.GetS(it, attrAnchoredAt))
	return a, nil
}
