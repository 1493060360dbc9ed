package engine

import (
	"errors"
	"fmt"
)

// Errors callers can branch on with errors.Is. Emit wraps them with the event
// type, the tenant and the value at fault; a context that ends before the
// event commits yields an error wrapping ctx.Err() (context.Canceled or
// context.DeadlineExceeded), and nothing was written.
var (
	// ErrNoTenant: the context carries no tenant (see WithTenant).
	ErrNoTenant = errors.New("no tenant in context")
	// ErrInvalidTenant: the tenant is not a valid tenant name (ValidTenant).
	ErrInvalidTenant = errors.New("invalid tenant")
	// ErrInvalidType: the event type is malformed (ValidType).
	ErrInvalidType = errors.New("malformed event type")
	// ErrUnknownType: the event type is not declared in the catalog.
	ErrUnknownType = errors.New("undeclared event type")
	// ErrInvalidPayload: the payload is not a JSON object.
	ErrInvalidPayload = errors.New("payload is not a JSON object")
	// ErrPayloadTooLarge: the canonical payload exceeds Config.MaxPayloadBytes.
	ErrPayloadTooLarge = errors.New("payload too large")
	// ErrTooManyWrites: the caller's writes do not fit in one transaction.
	ErrTooManyWrites = errors.New("too many writes")
	// ErrWritesTooLarge: the caller's writes exceed the transaction size limit.
	ErrWritesTooLarge = errors.New("writes too large")
	// ErrInvalidWrite: a caller write is malformed (no table, not exactly one
	// of Put, Update, Delete, ConditionCheck).
	ErrInvalidWrite = errors.New("invalid write")
	// ErrEventsTableWrite: a caller write touches the events table; only the
	// engine writes there.
	ErrEventsTableWrite = errors.New("write to the events table")
	// ErrConditionFailed: one of the caller's write conditions failed; the
	// event was not committed. The error is a *ConditionFailedError.
	ErrConditionFailed = errors.New("write condition failed")
	// ErrNotEventKey: a key is not an event row's (ParseEventKey).
	ErrNotEventKey = errors.New("not an event row key")
	// ErrBadRow: a row of a tenant's log is not a well-formed event (it
	// cannot be decoded, or its sort key names another seq; the error is
	// a *RowError), or its head row lacks last_seq or last_hash.
	ErrBadRow = errors.New("malformed event row")
	// ErrDuplicate: an event with the same idempotency key was already
	// emitted; nothing was written. The error is a *DuplicateError.
	ErrDuplicate = errors.New("duplicate event")
	// ErrThrottled: DynamoDB throttled the transaction until the context
	// ended.
	ErrThrottled = errors.New("throttled")
	// ErrInlineHandler: an INLINE subscription failed; nothing was written.
	ErrInlineHandler = errors.New("inline handler failed")
	// ErrRejected: DynamoDB rejected the event's own transaction for a
	// reason other than the ones above (validation, item size); see the
	// message. Retrying the same event cannot succeed.
	ErrRejected = errors.New("rejected by dynamodb")
	// ErrUnavailable: DynamoDB refused the call for a reason that is not the
	// event's (access denied, a missing table, bad credentials): nothing was
	// written and the same event may commit once an operator fixes the
	// cause. Callers hold their input and retry; it is never a rejection
	// (docs/group-commit.md, "Infrastructure errors").
	ErrUnavailable = errors.New("dynamodb unavailable")
)

// IsUnavailable reports whether err is an infrastructure failure: it
// matches ErrUnavailable, or it is a DynamoDB error about access,
// credentials or a missing table (AccessDeniedException,
// ResourceNotFoundException, ...) from a call outside Emit. Such a failure
// is never the input's fault.
func IsUnavailable(err error) bool {
	return errors.Is(err, ErrUnavailable) || infrastructureCode(apiCode(err))
}

// ConditionFailedError reports which of the caller's writes failed its
// condition. It matches ErrConditionFailed.
type ConditionFailedError struct {
	// Write is the index of the failing write in the caller's writes.
	Write int
	// Table is the failing write's table.
	Table string
	// Message is DynamoDB's cancellation message, if any.
	Message string
}

func (e *ConditionFailedError) Error() string {
	return fmt.Sprintf("write %d on table %q: %s", e.Write, e.Table, ErrConditionFailed)
}

// Is makes errors.Is(err, ErrConditionFailed) true.
func (e *ConditionFailedError) Is(target error) bool { return target == ErrConditionFailed }

// DuplicateError reports the event an idempotency key already produced. It
// matches ErrDuplicate.
type DuplicateError struct {
	// Key is the idempotency key.
	Key string
	// EventID is the ID of the event the key first produced.
	EventID string
	// Fingerprint is the first emit's Event.Fingerprint ("" if it had
	// none).
	Fingerprint string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("idempotency key %q already emitted event %s", e.Key, e.EventID)
}

// Is makes errors.Is(err, ErrDuplicate) true.
func (e *DuplicateError) Is(target error) bool { return target == ErrDuplicate }
