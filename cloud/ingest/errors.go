package ingest

import (
	"errors"
	"fmt"
)

// Reason says why a message was rejected. Reasons are metric labels and
// dead-letter texts, so they are stable.
type Reason string

// Rejection reasons.
const (
	ReasonBadTopic        Reason = "bad_topic"
	ReasonUnknownThing    Reason = "unknown_thing"
	ReasonTenantMismatch  Reason = "tenant_mismatch"
	ReasonOversize        Reason = "oversize"
	ReasonMalformedJSON   Reason = "malformed_json"
	ReasonBadVersion      Reason = "bad_version"
	ReasonThingMismatch   Reason = "thing_mismatch"
	ReasonInvalid         Reason = "invalid"
	ReasonUnknownType     Reason = "unknown_type"
	ReasonFutureTimestamp Reason = "future_timestamp"
	ReasonConflict        Reason = "conflict"
	// ReasonRateLimited is the reason of a summary letter: the device went
	// over its dead-letter limit (RejectionConfig.PerDevice).
	ReasonRateLimited Reason = "rate_limited"
)

// Reasons lists every rejection reason.
var Reasons = []Reason{ReasonBadTopic, ReasonUnknownThing, ReasonTenantMismatch, ReasonOversize,
	ReasonMalformedJSON, ReasonBadVersion, ReasonThingMismatch, ReasonInvalid, ReasonUnknownType,
	ReasonFutureTimestamp, ReasonConflict, ReasonRateLimited}

// Errors of the package.
var (
	// ErrRejected matches every *Rejection.
	ErrRejected = errors.New("message rejected")
)

// Rejection is a message refused for a reason; it matches ErrRejected.
type Rejection struct {
	Reason Reason
	Detail string
}

func (r *Rejection) Error() string { return string(r.Reason) + ": " + r.Detail }

// Is makes errors.Is(err, ErrRejected) true.
func (r *Rejection) Is(target error) bool { return target == ErrRejected }

func reject(reason Reason, format string, args ...any) *Rejection {
	return &Rejection{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the rejection reason of err, or "" when err is not a
// *Rejection.
func ReasonOf(err error) Reason {
	var r *Rejection
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}
