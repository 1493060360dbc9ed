package engine

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/internal/backoff"
)

// ErrUnknownOutcome: DynamoDB never answered the transaction definitively
// before the context ended; the event may have committed. Look its ID up
// (or run VerifyChain) before emitting again.
var ErrUnknownOutcome = errors.New("transaction outcome unknown")

// request is one Emit waiting in its tenant's queue.
type request struct {
	ctx    context.Context
	env    Envelope
	writes []Write
	key    string
	// fingerprint goes on the dedup row (Event.Fingerprint).
	fingerprint string
	items       []string // writeItems(writes)
	size        int
	done        chan struct{}
	err         error
	taken       bool // guarded by tenantLog.mu: the committer owns it now
}

func (r *request) finish(err error) {
	r.err = err
	close(r.done)
}

func (r *request) actions() int {
	n := 1 + len(r.writes)
	if r.key != "" {
		n++
	}
	return n
}

// tenantLog is one tenant's emit queue and the committer's view of its head.
// At most one committer goroutine runs per tenant; it exits when the queue is
// empty.
type tenantLog struct {
	tenant string

	mu      sync.Mutex
	queue   []*request
	running bool
	// forgotten: removed from Engine.tenants while idle; a submitter that
	// finds it set takes a fresh log (Engine.log) instead.
	forgotten bool

	// Owned by the running committer.
	headKnown bool
	headSeq   uint64
	headHash  string
}

func (e *Engine) log(tenant string) *tenantLog {
	e.mu.Lock()
	defer e.mu.Unlock()
	tl := e.tenants[tenant]
	if tl == nil {
		tl = &tenantLog{tenant: tenant}
		e.tenants[tenant] = tl
	}
	return tl
}

// forgetIdle removes tl from the tenants map when the map holds more
// than MaxIdleTenants entries and tl is still idle (no queue, no
// committer). Locks e.mu, then tl.mu: the only place that holds both, so
// the order cannot invert. A submitter holding tl from before sees
// forgotten and takes the new log, so a tenant never has two committers
// in one engine.
func (e *Engine) forgetIdle(tl *tenantLog) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.tenants) <= e.cfg.MaxIdleTenants || e.tenants[tl.tenant] != tl {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.queue) > 0 || tl.running {
		return
	}
	tl.forgotten = true
	delete(e.tenants, tl.tenant)
}

// submit queues req for its tenant's committer and waits for the outcome.
// A context that ends while req is still queued withdraws it; once a group
// holds it, the committer decides (and checks the context between
// attempts), so the answer is always the truth about the write.
func (e *Engine) submit(ctx context.Context, req *request) error {
	tl := e.log(req.env.Tenant)
	tl.mu.Lock()
	for tl.forgotten {
		tl.mu.Unlock()
		tl = e.log(req.env.Tenant)
		tl.mu.Lock()
	}
	tl.queue = append(tl.queue, req)
	if !tl.running {
		tl.running = true
		go e.commitLoop(tl)
	}
	tl.mu.Unlock()
	select {
	case <-req.done:
		return req.err
	case <-ctx.Done():
	}
	tl.mu.Lock()
	if !req.taken {
		for i, r := range tl.queue {
			if r == req {
				tl.queue = append(tl.queue[:i], tl.queue[i+1:]...)
				break
			}
		}
		tl.mu.Unlock()
		return fmt.Errorf("not committed: %w", ctx.Err())
	}
	tl.mu.Unlock()
	<-req.done
	return req.err
}

func (e *Engine) commitLoop(tl *tenantLog) {
	for {
		tl.mu.Lock()
		if len(tl.queue) == 0 {
			tl.running = false
			tl.mu.Unlock()
			e.forgetIdle(tl)
			return
		}
		group := e.takeGroup(tl)
		tl.mu.Unlock()
		e.commitGroup(tl, group)
	}
}

// takeGroup takes the longest prefix of the queue that fits one
// transaction; two emits with the same idempotency key, or whose writes
// touch the same item, never share one (the later waits for the next
// group, so it sees the earlier one committed). Called with tl.mu held.
func (e *Engine) takeGroup(tl *tenantLog) []*request {
	actions, size := 1, 0
	keys, items := map[string]bool{}, map[string]bool{}
	n := 0
	for _, r := range tl.queue {
		if n > 0 && (n == e.cfg.MaxGroupEvents || actions+r.actions() > MaxTransactItems ||
			size+r.size > MaxTransactBytes || (r.key != "" && keys[r.key]) || anyIn(r.items, items)) {
			break
		}
		actions += r.actions()
		size += r.size
		if r.key != "" {
			keys[r.key] = true
		}
		for _, it := range r.items {
			items[it] = true
		}
		r.taken = true
		n++
	}
	group := append([]*request(nil), tl.queue[:n]...)
	tl.queue = append(tl.queue[:0], tl.queue[n:]...)
	return group
}

func anyIn(ids []string, set map[string]bool) bool {
	for _, id := range ids {
		if set[id] {
			return true
		}
	}
	return false
}

// part says which piece of which request a transaction item is.
type part struct {
	req   int // index in the group; -1 for the head row
	kind  partKind
	write int // index in the request's writes, for partWrite
}

type partKind int

const (
	partHead partKind = iota
	partEvent
	partDedup
	partWrite
)

// attempt is one built transaction for a group.
type attempt struct {
	items []types.TransactWriteItem
	parts []part
	envs  []Envelope
	token string
}

// commitGroup commits group in one transaction, retrying conflicts with
// backoff, dropping (and answering) members whose own condition fails or
// whose context ends, until every member has its answer.
func (e *Engine) commitGroup(tl *tenantLog, group []*request) {
	start := time.Now()
	tries, backoffs := 0, 0
	var (
		at        *attempt
		unknown   bool  // the last call of at may have committed
		throttled bool  // the last failure was throttling
		lastErr   error // the last retryable failure, for the log
	)
	for len(group) > 0 {
		if !unknown {
			group = e.dropDone(group, throttled)
			if len(group) == 0 {
				return
			}
			if !tl.headKnown {
				if err := e.readHead(tl); err != nil {
					if code := apiCode(err); infrastructureCode(code) {
						e.cfg.Logger.Error("head read refused by dynamodb: access or table problem, not the events'", "tenant", tl.tenant, "events", len(group), "code", code, "err", err)
						for _, r := range group {
							r.finish(fmt.Errorf("%w: %w", ErrUnavailable, err))
						}
						return
					}
					lastErr = err
					e.backoff(group, &backoffs)
					continue
				}
			}
			var err error
			if at, err = e.build(tl, group); err != nil {
				for _, r := range group {
					r.finish(err)
				}
				return
			}
		} else if e.allDone(group) {
			if e.committed(tl, at) {
				e.succeed(tl, group, at, tries, start)
				return
			}
			for _, r := range group {
				r.finish(fmt.Errorf("%w: %w", ErrUnknownOutcome, lastErr))
			}
			tl.headKnown = false
			return
		}
		tries++
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.CallTimeout)
		_, err := e.cfg.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems:      at.items,
			ClientRequestToken: aws.String(at.token),
		})
		cancel()
		if err == nil {
			e.succeed(tl, group, at, tries, start)
			return
		}
		lastErr = err
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			var api smithy.APIError
			if errors.As(err, &api) {
				switch code := api.ErrorCode(); {
				case infrastructureCode(code):
					// Not any member's fault: every member fails with the
					// same answer, none is a rejection.
					if unknown && e.committed(tl, at) {
						e.succeed(tl, group, at, tries, start)
						return
					}
					e.cfg.Logger.Error("emit refused by dynamodb: access or table problem, not the events'", "tenant", tl.tenant, "events", len(group), "code", code, "err", err)
					for _, r := range group {
						r.finish(fmt.Errorf("%w: %w", ErrUnavailable, err))
					}
					tl.headKnown = false
					return
				case code == "ValidationException" || code == "IdempotentParameterMismatchException" || code == "SerializationException":
					if unknown && e.committed(tl, at) {
						e.succeed(tl, group, at, tries, start)
						return
					}
					if len(group) > 1 {
						// DynamoDB does not say which member is at fault:
						// commit them one by one so only the offender fails.
						for _, r := range group {
							e.commitGroup(tl, []*request{r})
						}
						return
					}
					group[0].finish(fmt.Errorf("%w: %w", ErrRejected, err))
					return
				}
				throttled = isThrottle(api.ErrorCode())
			}
			// No definitive answer: retry the same transaction with the same
			// token, which DynamoDB commits at most once.
			unknown = true
			e.cfg.Logger.Debug("emit retry", "tenant", tl.tenant, "events", len(group), "err", err)
			e.backoff(group, &backoffs)
			continue
		}
		if unknown && e.committed(tl, at) {
			e.succeed(tl, group, at, tries, start)
			return
		}
		unknown = false
		group, throttled = e.cancelled(tl, group, at, tce, &backoffs)
	}
}

// unavailable wraps err with ErrUnavailable when its DynamoDB error code is
// an infrastructure one; it returns other errors as they are.
func unavailable(err error) error {
	if err != nil && infrastructureCode(apiCode(err)) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// apiCode is err's DynamoDB error code, or "".
func apiCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// infrastructureCode reports whether a DynamoDB error code is about the
// caller's access, credentials or tables rather than the request: the same
// request may succeed once an operator fixes the cause (ErrUnavailable).
func infrastructureCode(code string) bool {
	switch code {
	case "AccessDeniedException", "ResourceNotFoundException", "UnrecognizedClientException",
		"ExpiredTokenException", "InvalidSignatureException", "MissingAuthenticationTokenException":
		return true
	}
	return false
}

// cancelled handles a TransactionCanceledException: members whose own
// condition failed (or whose items DynamoDB rejected) get their error and
// leave the group; a moved head, a transaction conflict or throttling backs
// off and retries the rest.
func (e *Engine) cancelled(tl *tenantLog, group []*request, at *attempt, tce *types.TransactionCanceledException, backoffs *int) ([]*request, bool) {
	reasons := tce.CancellationReasons
	if len(reasons) != len(at.items) {
		tl.headKnown = false
		if len(group) > 1 {
			for _, r := range group {
				e.commitGroup(tl, []*request{r})
			}
			return nil, false
		}
		e.backoff(group, backoffs)
		return group, false
	}
	failed := map[int]error{}
	headMoved, retry, throttled := false, false, false
	for i, r := range reasons {
		code := aws.ToString(r.Code)
		if code == "" || code == "None" {
			continue
		}
		p := at.parts[i]
		switch {
		case code == "ConditionalCheckFailed" && (p.kind == partHead || p.kind == partEvent):
			headMoved = true
		case code == "ConditionalCheckFailed" && p.kind == partDedup:
			id, fp := "", ""
			if v, ok := r.Item[AttrEventID].(*types.AttributeValueMemberS); ok {
				id = v.Value
				if f, ok := r.Item[AttrFingerprint].(*types.AttributeValueMemberS); ok {
					fp = f.Value
				}
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), e.cfg.CallTimeout)
				id, fp, _, _ = e.dedupLookup(ctx, tl.tenant, group[p.req].key)
				cancel()
			}
			failed[p.req] = &DuplicateError{Key: group[p.req].key, EventID: id, Fingerprint: fp}
		case code == "ConditionalCheckFailed" && p.kind == partWrite:
			failed[p.req] = &ConditionFailedError{Write: p.write, Table: writeTable(group[p.req].writes[p.write]), Message: aws.ToString(r.Message)}
		case code == "TransactionConflict":
			retry = true
		case isThrottle(code):
			retry, throttled = true, true
		case p.kind == partHead:
			for j := range group {
				failed[j] = fmt.Errorf("%w: head row: %s: %s", ErrRejected, code, aws.ToString(r.Message))
			}
		default:
			failed[p.req] = fmt.Errorf("%w: %s: %s", ErrRejected, code, aws.ToString(r.Message))
		}
	}
	if headMoved {
		tl.headKnown = false
	}
	if len(failed) > 0 {
		rest := group[:0:0]
		for j, r := range group {
			if err, ok := failed[j]; ok {
				r.finish(err)
			} else {
				rest = append(rest, r)
			}
		}
		return rest, false
	}
	if !headMoved && !retry {
		// Cancelled with no reason we know: re-read the head and retry.
		tl.headKnown = false
	}
	e.backoff(group, backoffs)
	return group, throttled
}

func (e *Engine) succeed(tl *tenantLog, group []*request, at *attempt, tries int, start time.Time) {
	last := at.envs[len(at.envs)-1]
	tl.headKnown, tl.headSeq, tl.headHash = true, last.Seq, last.Hash
	// Observed before the callers are released, so a caller that reads
	// the metrics after Emit returns sees its own event counted.
	e.cfg.Observer.Committed(tl.tenant, len(group), tries, time.Since(start))
	for i, r := range group {
		r.env = at.envs[i]
		r.finish(nil)
	}
}

// committed reports whether at's first event is in the log: the answer after
// an unknown outcome.
func (e *Engine) committed(tl *tenantLog, at *attempt) bool {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.CallTimeout)
	defer cancel()
	first := at.envs[0]
	out, err := e.cfg.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(e.cfg.EventsTable),
		Key:            eventKey(tl.tenant, first.Seq),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil || out.Item == nil {
		return false
	}
	id, _ := out.Item[AttrID].(*types.AttributeValueMemberS)
	return id != nil && id.Value == first.ID
}

func (e *Engine) dropDone(group []*request, throttled bool) []*request {
	rest := group[:0:0]
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			if throttled {
				r.finish(fmt.Errorf("not committed: %w: %w", ErrThrottled, err))
			} else {
				r.finish(fmt.Errorf("not committed: %w", err))
			}
			continue
		}
		rest = append(rest, r)
	}
	return rest
}

func (e *Engine) allDone(group []*request) bool {
	for _, r := range group {
		if r.ctx.Err() == nil {
			return false
		}
	}
	return true
}

// backoff waits before group's next attempt, *n being the number of waits
// so far: full jitter up to BackoffBase·2^n, capped at BackoffMax. The wait
// ends early once no member is waiting for the answer any more; the
// caller's loop then answers them.
func (e *Engine) backoff(group []*request, n *int) {
	ctx, stop := waiting(group)
	defer stop()
	policy := backoff.Policy{Base: e.cfg.BackoffBase, Max: e.cfg.BackoffMax, Jitter: 1}
	_ = policy.Wait(ctx, *n) // an error only says every member's context ended
	*n++
}

// waiting returns a context that ends once every member of group has
// stopped waiting (its context ended), and a func that releases it.
func waiting(group []*request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	left := new(atomic.Int64)
	left.Store(int64(len(group)))
	if len(group) == 0 {
		cancel()
	}
	stops := make([]func() bool, len(group))
	for i, r := range group {
		stops[i] = context.AfterFunc(r.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

func isThrottle(code string) bool {
	switch code {
	case "ThrottlingError", "ThrottlingException", "ProvisionedThroughputExceeded",
		"ProvisionedThroughputExceededException", "RequestLimitExceeded":
		return true
	}
	return false
}

func (e *Engine) readHead(tl *tenantLog) error {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.CallTimeout)
	defer cancel()
	h, err := e.head(ctx, tl.tenant)
	if err != nil {
		return err
	}
	tl.headKnown, tl.headSeq, tl.headHash = true, h.Seq, h.Hash
	return nil
}

// build assigns sequence numbers and hashes to the group and lays out its
// transaction: the head update first, then each event's row, dedup row and
// writes.
func (e *Engine) build(tl *tenantLog, group []*request) (*attempt, error) {
	at := &attempt{token: newToken()}
	seq, prev := tl.headSeq, tl.headHash
	if !tl.headKnown || seq == 0 {
		prev = Genesis
	}
	now := e.cfg.Now().UTC()
	head := &types.Update{
		TableName:        aws.String(e.cfg.EventsTable),
		Key:              headKey(tl.tenant),
		UpdateExpression: aws.String("SET #last_seq = :next, #last_hash = :hash, #tenant = :tenant, #head_tenant = :tenant, #updated_at = :now"),
		ExpressionAttributeNames: map[string]string{
			"#last_seq": AttrLastSeq, "#last_hash": AttrLastHash, "#tenant": AttrTenant, "#head_tenant": AttrHeadTenant, "#updated_at": AttrUpdatedAt,
		},
	}
	if seq == 0 {
		head.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		head.ConditionExpression = aws.String("#last_seq = :prev")
	}
	at.items = append(at.items, types.TransactWriteItem{Update: head})
	at.parts = append(at.parts, part{req: -1, kind: partHead})
	for i, r := range group {
		env := r.env
		seq++
		env.Seq = seq
		if err := Seal(&env, prev); err != nil {
			return nil, err
		}
		prev = env.Hash
		item, err := EventItem(env)
		if err != nil {
			return nil, err
		}
		at.envs = append(at.envs, env)
		at.items = append(at.items, types.TransactWriteItem{Put: &types.Put{
			TableName:           aws.String(e.cfg.EventsTable),
			Item:                item,
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}})
		at.parts = append(at.parts, part{req: i, kind: partEvent})
		if r.key != "" {
			dedup := map[string]types.AttributeValue{
				AttrPK:        attr.S(DedupPK(tl.tenant, r.key)),
				AttrEventID:   attr.S(env.ID),
				AttrTenant:    attr.S(tl.tenant),
				AttrType:      attr.S(env.Type),
				AttrCreatedAt: attr.S(now.Format(TimeLayout)),
				AttrTTL:       attr.Uint(uint64(now.Add(e.cfg.DedupTTL).Unix())),
			}
			if r.fingerprint != "" {
				dedup[AttrFingerprint] = attr.S(r.fingerprint)
			}
			at.items = append(at.items, types.TransactWriteItem{Put: &types.Put{
				TableName:                           aws.String(e.cfg.InboxTable),
				Item:                                dedup,
				ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}})
			at.parts = append(at.parts, part{req: i, kind: partDedup})
		}
		for j, w := range r.writes {
			at.items = append(at.items, w)
			at.parts = append(at.parts, part{req: i, kind: partWrite, write: j})
		}
	}
	head.ExpressionAttributeValues = map[string]types.AttributeValue{
		":next": attr.Uint(seq), ":hash": attr.S(prev), ":tenant": attr.S(tl.tenant), ":now": attr.S(now.Format(TimeLayout)),
	}
	if tl.headSeq > 0 && tl.headKnown {
		head.ExpressionAttributeValues[":prev"] = attr.Uint(tl.headSeq)
	}
	return at, nil
}

func writeTable(w Write) string {
	switch {
	case w.Put != nil:
		return aws.ToString(w.Put.TableName)
	case w.Update != nil:
		return aws.ToString(w.Update.TableName)
	case w.Delete != nil:
		return aws.ToString(w.Delete.TableName)
	case w.ConditionCheck != nil:
		return aws.ToString(w.ConditionCheck.TableName)
	}
	return ""
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}
