package engine

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// Lane says who dispatches a subscription, and so what it is guaranteed.
// Each lane has exactly one dispatcher; a subscription on a lane whose
// dispatcher never sees its events never runs (Catalog.Check catches that).
type Lane string

// The four lanes (docs/contract.md, "Lanes").
const (
	// Inline handlers run inside Emit, before the write; an error fails the
	// emit and nothing commits.
	Inline Lane = "INLINE"
	// Local handlers run in the emitting process after commit; best effort,
	// errors are logged.
	Local Lane = "LOCAL"
	// Durable handlers run in a worker fed by the events FIFO queue:
	// at-least-once delivery, exactly-once effect through the inbox.
	Durable Lane = "DURABLE"
	// BestEffort handlers run in a record-change consumer fed by the app
	// table's stream: row.* events only, no order, no dead letter.
	BestEffort Lane = "BEST_EFFORT"
)

// Lanes lists every lane.
var Lanes = []Lane{Inline, Local, Durable, BestEffort}

// Valid reports whether l is one of the four lanes.
func (l Lane) Valid() bool {
	switch l {
	case Inline, Local, Durable, BestEffort:
		return true
	}
	return false
}

// RowChangePrefix starts every record-change event type:
// "row.<entity>.<insert|modify|remove>".
const RowChangePrefix = "row."

// IsRowChange reports whether typ is a record-change type.
func IsRowChange(typ string) bool { return strings.HasPrefix(typ, RowChangePrefix) }

// Handler handles one event. ctx carries the event's tenant, correlation id
// and actor (ContextFor). For DURABLE subscriptions a returned error is
// retried by the queue unless it wraps a terminal error of the consumer.
type Handler func(ctx context.Context, env Envelope) error

// Subscription binds a handler to the event types its Pattern matches, on
// one lane.
type Subscription struct {
	// Name is unique; DURABLE inbox rows are keyed by event id and Name.
	Name string `json:"name"`
	// Pattern is a glob over event types with path.Match syntax ('*', '?',
	// '[...]'); a pattern without a wildcard matches one type exactly.
	Pattern string `json:"pattern"`
	// Lane selects the dispatcher.
	Lane Lane `json:"lane"`
	// Handler runs the subscription; nil in a catalog that only declares.
	Handler Handler `json:"-"`
}

// Matches reports whether the subscription's pattern matches typ. A
// malformed pattern matches nothing (Catalog.Check reports it).
func (s Subscription) Matches(typ string) bool {
	ok, err := path.Match(s.Pattern, typ)
	return err == nil && ok
}

// Validate checks the name, lane and pattern syntax.
func (s Subscription) Validate() error {
	if s.Name == "" {
		return fmt.Errorf("subscription with pattern %q: empty name", s.Pattern)
	}
	if !s.Lane.Valid() {
		return fmt.Errorf("subscription %q: lane %q: want one of %v", s.Name, s.Lane, Lanes)
	}
	if _, err := path.Match(s.Pattern, ""); err != nil || s.Pattern == "" {
		return fmt.Errorf("subscription %q: pattern %q: malformed glob", s.Name, s.Pattern)
	}
	return nil
}

// Match returns the subscriptions on lane whose pattern matches typ, in the
// order given.
func Match(subs []Subscription, lane Lane, typ string) []Subscription {
	var out []Subscription
	for _, s := range subs {
		if s.Lane == lane && s.Matches(typ) {
			out = append(out, s)
		}
	}
	return out
}
