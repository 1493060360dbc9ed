package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// Report is the body of GET /v1/ops/reconcile.
type Report struct {
	Tenants []TenantReport `json:"tenants"`
	// DeadLetters counts open dead letters (not yet redriven), poison pills
	// included.
	DeadLetters int `json:"dead_letters"`
	// DLQDepth is the events dead-letter queue's approximate depth
	// (visible plus in flight).
	DLQDepth int `json:"dlq_depth"`
	// Unmatched counts (event, DURABLE subscription) pairs older than the
	// reconciler's grace with neither a completed nor a dead inbox row:
	// work that is stuck or was lost.
	Unmatched int `json:"unmatched"`
}

// TenantReport is one tenant's chain.
type TenantReport struct {
	Tenant      string `json:"tenant"`
	Events      int    `json:"events"`
	ChainIntact bool   `json:"chain_intact"`
	// FirstBadSeq and Reason say where and why a broken chain breaks.
	FirstBadSeq uint64 `json:"first_bad_seq,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

func (a *API) reconcile(w http.ResponseWriter, r *http.Request) {
	if !a.isOperator(r) {
		writeError(w, http.StatusUnauthorized, CodeUnauthorized, "missing or wrong operator token")
		return
	}
	if a.cfg.Reconciler == nil {
		writeError(w, http.StatusNotImplemented, CodeNotConfigured, "reconcile is not configured on this api")
		return
	}
	rep, err := a.cfg.Reconciler.Reconcile(r.Context())
	if err != nil {
		a.unavailable(w, r, fmt.Errorf("reconcile: %w", err))
		return
	}
	if rep.Tenants == nil {
		rep.Tenants = []TenantReport{}
	}
	writeJSON(w, http.StatusOK, rep)
}

// ReconcileDB is the part of the DynamoDB API the reconciler reads with.
type ReconcileDB interface {
	engine.DynamoDB
	deadletter.DynamoAPI
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// QueueDepth is the part of the SQS API the reconciler reads with.
type QueueDepth interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// ReconcilerConfig configures the built-in Reconciler.
type ReconcilerConfig struct {
	// DB and Queue are required.
	DB    ReconcileDB
	Queue QueueDepth
	// EventsTable, InboxTable, DeadLettersTable and DLQName (the queue's
	// name, resources.Names.EventsDLQ) are required.
	EventsTable, InboxTable, DeadLettersTable, DLQName string
	// Subscriptions are the catalog's; the DURABLE ones define the work
	// every event owes. Required.
	Subscriptions []engine.Subscription
	// Grace: events younger than this are in flight, not unmatched.
	// Default 2 minutes.
	Grace time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// Validate reports the first missing field.
func (c ReconcilerConfig) Validate() error {
	switch {
	case c.DB == nil || c.Queue == nil:
		return errors.New("reconciler config: db and queue: required")
	case c.EventsTable == "" || c.InboxTable == "" || c.DeadLettersTable == "" || c.DLQName == "":
		return errors.New("reconciler config: events, inbox, dead letters tables and dlq name: required")
	case c.Grace < 0:
		return fmt.Errorf("reconciler config: grace %v: must not be negative", c.Grace)
	}
	return nil
}

// ChainReconciler is the built-in Reconciler: it verifies every tenant's
// chain, counts open dead letters, reads the DLQ depth and checks that every
// event's DURABLE work reached a final inbox state.
//
// It reads every event row and its inbox rows, so it costs O(events) reads;
// it is an operator's tool, not a health probe.
type ChainReconciler struct {
	cfg      ReconcilerConfig
	verifier *engine.Verifier
	letters  *deadletter.Store
}

var _ Reconciler = (*ChainReconciler)(nil)

// NewReconciler validates cfg and returns a ChainReconciler.
func NewReconciler(cfg ReconcilerConfig) (*ChainReconciler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Grace == 0 {
		cfg.Grace = 2 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	letters, err := deadletter.New(cfg.DB, cfg.DeadLettersTable, cfg.Now)
	if err != nil {
		return nil, err
	}
	return &ChainReconciler{cfg: cfg, verifier: engine.NewVerifier(cfg.DB, cfg.EventsTable, 0), letters: letters}, nil
}

// Reconcile builds the report.
func (c *ChainReconciler) Reconcile(ctx context.Context) (Report, error) {
	var rep Report
	tenants, err := c.verifier.Tenants(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("list tenants: %w", err)
	}
	for _, t := range tenants {
		cr, err := c.verifier.VerifyChain(ctx, t)
		if err != nil {
			return Report{}, fmt.Errorf("verify chain of tenant %q: %w", t, err)
		}
		rep.Tenants = append(rep.Tenants, TenantReport{Tenant: t, Events: cr.Events, ChainIntact: cr.Intact, FirstBadSeq: cr.FirstBadSeq, Reason: string(cr.Reason)})
		n, err := c.unmatched(ctx, t)
		if err != nil {
			return Report{}, err
		}
		rep.Unmatched += n
	}
	letters, err := c.letters.All(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("read dead letters: %w", err)
	}
	for _, l := range letters {
		if l.Open() {
			rep.DeadLetters++
		}
	}
	if rep.DLQDepth, err = c.dlqDepth(ctx); err != nil {
		return Report{}, err
	}
	return rep, nil
}

func (c *ChainReconciler) dlqDepth(ctx context.Context) (int, error) {
	u, err := c.cfg.Queue.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(c.cfg.DLQName)})
	if err != nil {
		return 0, fmt.Errorf("find queue %q: %w", c.cfg.DLQName, err)
	}
	out, err := c.cfg.Queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: u.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return 0, fmt.Errorf("depth of queue %q: %w", c.cfg.DLQName, err)
	}
	depth := 0
	for _, v := range out.Attributes {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("depth of queue %q: attribute %q: %w", c.cfg.DLQName, v, err)
		}
		depth += n
	}
	return depth, nil
}

// unmatched counts tenant's settled-age (event, subscription) pairs whose
// inbox row is absent or still pending.
func (c *ChainReconciler) unmatched(ctx context.Context, tenant string) (int, error) {
	cutoff := c.cfg.Now().Add(-c.cfg.Grace)
	var keys []string
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(c.cfg.EventsTable),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ProjectionExpression:      aws.String("id, #type, occurred_at"),
		ExpressionAttributeNames:  map[string]string{"#type": engine.AttrType},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(engine.EventPK(tenant))},
	}
	for {
		out, err := c.cfg.DB.Query(ctx, in)
		if err != nil {
			return 0, fmt.Errorf("read events of tenant %q: %w", tenant, err)
		}
		for _, it := range out.Items {
			id, typ, at := attrS(it, engine.AttrID), attrS(it, engine.AttrType), attrS(it, engine.AttrOccurredAt)
			if ts, err := time.Parse(engine.TimeLayout, at); err == nil && ts.After(cutoff) {
				continue
			}
			for _, s := range engine.Match(c.cfg.Subscriptions, engine.Durable, typ) {
				keys = append(keys, inbox.Key(id, s.Name))
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	final, err := c.settled(ctx, keys)
	if err != nil {
		return 0, fmt.Errorf("read inbox rows of tenant %q: %w", tenant, err)
	}
	return len(keys) - final, nil
}

// settled counts the keys whose inbox row is completed or dead.
func (c *ChainReconciler) settled(ctx context.Context, keys []string) (int, error) {
	n := 0
	for len(keys) > 0 {
		batch := keys[:min(100, len(keys))]
		keys = keys[len(batch):]
		req := make([]map[string]types.AttributeValue, len(batch))
		for i, k := range batch {
			req[i] = map[string]types.AttributeValue{"pk": str(k)}
		}
		pending := map[string]types.KeysAndAttributes{c.cfg.InboxTable: {
			Keys: req, ProjectionExpression: aws.String("pk, #status"),
			ExpressionAttributeNames: map[string]string{"#status": "status"},
		}}
		for attempt := 0; len(pending) > 0; attempt++ {
			out, err := c.cfg.DB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return 0, err
			}
			for _, it := range out.Responses[c.cfg.InboxTable] {
				if s := attrS(it, "status"); s == string(inbox.Completed) || s == string(inbox.Dead) {
					n++
				}
			}
			pending = out.UnprocessedKeys
			if len(pending) > 0 {
				select {
				case <-ctx.Done():
					return 0, ctx.Err()
				case <-time.After(time.Duration(min(attempt+1, 10)) * 50 * time.Millisecond):
				}
			}
		}
	}
	return n, nil
}

func attrS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
