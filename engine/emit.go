package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"
)

// Engine emits events. It is safe for concurrent use; build one per process
// with New and share it, so concurrent emits for a tenant group-commit.
type Engine struct {
	cfg   Config
	local sync.WaitGroup

	mu      sync.Mutex
	tenants map[string]*tenantLog
}

// New fills cfg's defaults, validates it and returns an Engine.
func New(cfg Config) (*Engine, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, tenants: map[string]*tenantLog{}}, nil
}

// Close waits for LOCAL handlers that are still running.
func (e *Engine) Close() error {
	e.local.Wait()
	return nil
}

// Event is one event to emit, with its options.
type Event struct {
	// Type is a declared event type.
	Type string
	// Payload marshals to a JSON object: a map, a struct, or raw JSON as
	// json.RawMessage, []byte or string.
	Payload any
	// Writes commit in the same transaction as the event.
	Writes []Write
	// IdempotencyKey, if set, makes the emit idempotent per tenant: a repeat
	// with the same key writes nothing and returns a *DuplicateError naming
	// the first event (cloud ingest uses "<thing>/<event id>", `bowline
	// emit` its --idempotency-key flag).
	IdempotencyKey string
	// Fingerprint, with an IdempotencyKey, is kept on the key's dedup row
	// (at most MaxFingerprintBytes): a later emit with the key fails with
	// a *DuplicateError carrying the first emit's Fingerprint, so the
	// caller can tell a repeat of an event from another event reusing
	// the key without a row of its own (cloud ingest keeps a payload
	// digest here). Ignored without an IdempotencyKey.
	Fingerprint string
}

// MaxFingerprintBytes bounds Event.Fingerprint, so the dedup row stays
// one write unit.
const MaxFingerprintBytes = 256

// Emit emits one event of type typ with payload, committing writes in the
// same transaction. The tenant, correlation id and actor come from ctx. See
// EmitEvent.
func (e *Engine) Emit(ctx context.Context, typ string, payload any, writes ...Write) (Envelope, error) {
	return e.EmitEvent(ctx, Event{Type: typ, Payload: payload, Writes: writes})
}

// EmitEvent validates ev, runs the INLINE subscriptions, commits the event
// (chain head, event row, dedup row, ev.Writes) in one transaction, group-
// committed with concurrent emits for the same tenant, then starts the LOCAL
// subscriptions. It returns the committed envelope, or an error and nothing
// was written; for a duplicate the envelope carries the first event's ID.
func (e *Engine) EmitEvent(ctx context.Context, ev Event) (Envelope, error) {
	tenant, _ := Tenant(ctx)
	env, err := e.emit(ctx, tenant, ev)
	if err != nil {
		e.cfg.Observer.Failed(tenant, ev.Type, err)
		return env, fmt.Errorf("emit %s for tenant %q: %w", ev.Type, tenant, err)
	}
	return env, nil
}

func (e *Engine) emit(ctx context.Context, tenant string, ev Event) (Envelope, error) {
	switch {
	case tenant == "":
		return Envelope{}, ErrNoTenant
	case !ValidTenant(tenant):
		return Envelope{}, fmt.Errorf("%w: %q", ErrInvalidTenant, tenant)
	case !ValidType(ev.Type):
		return Envelope{}, fmt.Errorf("%w: %q: want dot-separated lowercase words", ErrInvalidType, ev.Type)
	case !e.cfg.Catalog.Declared(ev.Type):
		return Envelope{}, fmt.Errorf("%w: %q", ErrUnknownType, ev.Type)
	}
	payload, canon, err := payloadObject(ev.Payload)
	if err != nil {
		return Envelope{}, err
	}
	if len(canon) > e.cfg.MaxPayloadBytes {
		return Envelope{}, fmt.Errorf("%w: %d bytes of canonical JSON; at most %d", ErrPayloadTooLarge, len(canon), e.cfg.MaxPayloadBytes)
	}
	if len(ev.Fingerprint) > MaxFingerprintBytes {
		return Envelope{}, fmt.Errorf("%w: fingerprint of %d bytes; at most %d", ErrInvalidPayload, len(ev.Fingerprint), MaxFingerprintBytes)
	}
	maxWrites := MaxWritesPerEvent
	if ev.IdempotencyKey == "" {
		maxWrites++
	}
	writesSize, err := e.checkWrites(ev.Writes, maxWrites)
	if err != nil {
		return Envelope{}, err
	}
	size := writesSize + len(canon) + 1024
	if size > MaxTransactBytes {
		return Envelope{}, fmt.Errorf("%w: about %d bytes with the event; at most %d", ErrWritesTooLarge, size, MaxTransactBytes)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.cfg.DefaultTimeout)
		defer cancel()
	}

	env := Envelope{
		ID:         ulid.Make().String(),
		Type:       ev.Type,
		Tenant:     tenant,
		OccurredAt: e.cfg.Now().UTC(),
		Payload:    payload,
	}
	env.CorrelationID, _ = CorrelationID(ctx)
	if env.CorrelationID == "" {
		env.CorrelationID = env.ID
	}
	if env.Actor, _ = Actor(ctx); env.Actor == "" {
		env.Actor = DefaultActor
	}
	if ev.IdempotencyKey != "" {
		if id, fp, found, err := e.dedupLookup(ctx, tenant, ev.IdempotencyKey); err != nil {
			return Envelope{}, err
		} else if found {
			env.ID = id
			return env, &DuplicateError{Key: ev.IdempotencyKey, EventID: id, Fingerprint: fp}
		}
	}
	for _, s := range Match(e.cfg.Catalog.Subscriptions, Inline, env.Type) {
		if s.Handler == nil {
			continue
		}
		if err := s.Handler(ctx, env); err != nil {
			return Envelope{}, fmt.Errorf("%w: subscription %q: %w", ErrInlineHandler, s.Name, err)
		}
	}

	req := &request{ctx: ctx, env: env, writes: ev.Writes, key: ev.IdempotencyKey, fingerprint: ev.Fingerprint, items: writeItems(ev.Writes), size: size, done: make(chan struct{})}
	if err := e.submit(ctx, req); err != nil {
		if dup := (*DuplicateError)(nil); errors.As(err, &dup) {
			env.ID = dup.EventID
			return env, err
		}
		return Envelope{}, err
	}
	e.runLocal(req.env)
	return req.env, nil
}

func (e *Engine) runLocal(env Envelope) {
	for _, s := range Match(e.cfg.Catalog.Subscriptions, Local, env.Type) {
		if s.Handler == nil {
			continue
		}
		e.local.Add(1)
		go func() {
			defer e.local.Done()
			defer func() {
				if r := recover(); r != nil {
					e.cfg.Logger.Error("local subscription panicked", "subscription", s.Name, "event", env.ID, "type", env.Type, "tenant", env.Tenant, "panic", r)
				}
			}()
			ctx, cancel := context.WithTimeout(ContextFor(context.Background(), env), e.cfg.DefaultTimeout)
			defer cancel()
			if err := s.Handler(ctx, env); err != nil {
				e.cfg.Logger.Error("local subscription failed", "subscription", s.Name, "event", env.ID, "type", env.Type, "tenant", env.Tenant, "err", err)
			}
		}()
	}
}

// dedupLookup returns the event id an idempotency key already produced,
// and the fingerprint it was emitted with.
func (e *Engine) dedupLookup(ctx context.Context, tenant, key string) (id, fingerprint string, found bool, err error) {
	out, err := e.cfg.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(e.cfg.InboxTable),
		Key:            dedupKey(tenant, key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", "", false, fmt.Errorf("idempotency key %q: read %s: %w", key, e.cfg.InboxTable, unavailable(err))
	}
	if out.Item == nil {
		return "", "", false, nil
	}
	v, _ := out.Item[AttrEventID].(*types.AttributeValueMemberS)
	if v == nil {
		return "", "", false, fmt.Errorf("idempotency key %q: dedup row in %s has no %s", key, e.cfg.InboxTable, AttrEventID)
	}
	if f, ok := out.Item[AttrFingerprint].(*types.AttributeValueMemberS); ok {
		fingerprint = f.Value
	}
	return v.Value, fingerprint, true, nil
}
