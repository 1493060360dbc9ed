package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
)

// Envelope is one event as it is stored, relayed and handed to handlers.
//
// ID, Type, Tenant, CorrelationID, Actor, OccurredAt, Payload and Seq are
// hashed (docs/chain.md); PrevHash and Hash link the tenant's chain.
type Envelope struct {
	// ID is a ULID: unique and sortable by creation time.
	ID string `json:"id"`
	// Type is a declared event type such as "bowl.meal_finished".
	Type string `json:"type"`
	// Tenant owns the event; it comes from the emitting context.
	Tenant string `json:"tenant"`
	// CorrelationID ties the events of one request together; it defaults to
	// the event's own ID.
	CorrelationID string `json:"correlation_id"`
	// Actor caused the event; it defaults to DefaultActor.
	Actor string `json:"actor"`
	// OccurredAt is when Emit built the event, in UTC, stored in the
	// fixed-width layout TimeLayout.
	OccurredAt time.Time `json:"occurred_at"`
	// Payload is the event's JSON object. Numbers are float64.
	Payload map[string]any `json:"payload"`
	// Seq is the event's position in the tenant's log, from 1.
	Seq uint64 `json:"seq"`
	// PrevHash is the previous event's Hash, or Genesis for seq 1.
	PrevHash string `json:"prev_hash"`
	// Hash is sha256(PrevHash || JCS(hashed fields)), lowercase hex.
	Hash string `json:"hash"`
}

// DefaultActor is the actor of an event emitted from a context without one.
const DefaultActor = "system"

// TimeLayout is the stored form of OccurredAt: UTC with exactly nine
// fractional digits, so the string that is hashed is the string that is
// stored, in every language.
const TimeLayout = "2006-01-02T15:04:05.000000000Z"

// DecodePayload unmarshals the payload into v (a struct pointer, usually).
func (e Envelope) DecodePayload(v any) error {
	b, err := json.Marshal(e.Payload)
	if err != nil {
		return fmt.Errorf("event %s payload: %w", e.ID, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("event %s payload into %T: %w", e.ID, v, err)
	}
	return nil
}

var (
	typePattern   = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)
	tenantPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)
)

// ValidType reports whether typ is a well-formed event type: two or more
// dot-separated lowercase words ("bowl.meal_finished", "row.order.insert").
func ValidType(typ string) bool { return typePattern.MatchString(typ) }

// ValidTenant reports whether tenant can name a tenant: 1-128 letters,
// digits, '_', '.', ':' or '-', starting with a letter or digit ('#' is the
// key separator and never allowed).
func ValidTenant(tenant string) bool { return tenantPattern.MatchString(tenant) }

// payloadObject turns a caller's payload into a JSON object with float64
// numbers, or fails with ErrInvalidPayload. It returns the canonical JSON
// of the object too, whose length is the payload's size.
func payloadObject(payload any) (map[string]any, []byte, error) {
	var raw []byte
	switch p := payload.(type) {
	case nil:
		return nil, nil, fmt.Errorf("%w: payload is nil; want a JSON object", ErrInvalidPayload)
	case json.RawMessage:
		raw = p
	case []byte:
		raw = p
	case string:
		raw = []byte(p)
	default:
		b, err := json.Marshal(payload)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %T: %v", ErrInvalidPayload, payload, err)
		}
		raw = b
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, nil, fmt.Errorf("%w: %.40q is not a JSON object", ErrInvalidPayload, raw)
	}
	canon, err := canonicalJSON(m)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidPayload, err)
	}
	// What DynamoDB cannot store (an empty map key) fails here, not in the
	// transaction.
	if _, err := attributevalue.MarshalMap(m); err != nil {
		return nil, nil, fmt.Errorf("%w: cannot be stored: %v", ErrInvalidPayload, err)
	}
	if err := storableNumbers(m); err != nil {
		return nil, nil, fmt.Errorf("%w: cannot be stored: %v", ErrInvalidPayload, err)
	}
	return m, canon, nil
}

// storableNumbers checks that every number fits DynamoDB's range: a
// magnitude below 1e126 and, unless zero, at least 1e-130.
func storableNumbers(v any) error {
	switch v := v.(type) {
	case float64:
		if a := math.Abs(v); a >= 1e126 || (a != 0 && a < 1e-130) {
			return fmt.Errorf("number %g is outside DynamoDB's range (1e-130 to 1e126)", v)
		}
	case map[string]any:
		for _, e := range v {
			if err := storableNumbers(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := storableNumbers(e); err != nil {
				return err
			}
		}
	}
	return nil
}
