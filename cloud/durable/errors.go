package durable

import (
	"errors"
	"fmt"
)

// Errors of the consumer.
var (
	// ErrConfig: a Config that Validate refuses.
	ErrConfig = errors.New("durable: bad config")
	// ErrRejected matches every *Rejection.
	ErrRejected = errors.New("record rejected")
)

// Reason says why a record was rejected (the metric's label and the dead
// letter's error).
type Reason string

// Rejection reasons.
const (
	// ReasonMalformed: the record, its payload or a sample does not decode.
	ReasonMalformed Reason = "malformed"
	// ReasonForeignThing: the batch names a thing outside the gateway's
	// namespace (neither "<gateway>" nor "<gateway>:*").
	ReasonForeignThing Reason = "foreign_thing"
	// ReasonUnknownThing: a thing of the batch is not registered.
	ReasonUnknownThing Reason = "unknown_thing"
	// ReasonOtherTenant: a thing of the batch is registered to another
	// tenant than the record's.
	ReasonOtherTenant Reason = "other_tenant"
	// ReasonRateLimited marks the one summary letter that stands for a
	// gateway's rejections past its limit in a window.
	ReasonRateLimited Reason = "rate_limited"
)

// Rejection is a record the consumer refuses for good: it is dead-lettered
// and never retried. Detail quotes the input at fault.
type Rejection struct {
	Reason Reason
	Detail string
}

func (r *Rejection) Error() string { return fmt.Sprintf("%s: %s", r.Reason, r.Detail) }

// Is makes errors.Is(err, ErrRejected) true.
func (r *Rejection) Is(target error) bool { return target == ErrRejected }

func reject(reason Reason, format string, args ...any) *Rejection {
	return &Rejection{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}
