package engine

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// EventType declares one event type.
type EventType struct {
	// Name is the type, e.g. "bowl.meal_finished".
	Name string `json:"name"`
	// Fields names the payload fields, for documentation.
	Fields []string `json:"fields,omitempty"`
	// Description says what happened, in a sentence.
	Description string `json:"description,omitempty"`
}

// Producer declares a component that emits events, and which.
type Producer struct {
	// Name is the component, e.g. "ingest" or "api".
	Name string `json:"name"`
	// Emits lists the event types it emits (exact names, not globs).
	Emits []string `json:"emits"`
}

// Catalog declares every event type, who produces it and who subscribes.
// It is the input of Engine (Emit refuses undeclared types), of the
// consumers (which dispatch its subscriptions) and of `bowline catalog`.
type Catalog struct {
	Types         []EventType    `json:"types"`
	Producers     []Producer     `json:"producers"`
	Subscriptions []Subscription `json:"subscriptions"`
}

// Declared reports whether typ is a declared event type.
func (c Catalog) Declared(typ string) bool {
	for _, t := range c.Types {
		if t.Name == typ {
			return true
		}
	}
	return false
}

// Entry is one event type of the generated catalog: its producers and the
// subscriptions that match it, with their lanes.
type Entry struct {
	Type          string         `json:"type"`
	Fields        []string       `json:"fields,omitempty"`
	Producers     []string       `json:"producers"`
	Subscriptions []Subscription `json:"subscriptions"`
}

// Entries generates the catalog: one entry per declared type, sorted by
// type.
func (c Catalog) Entries() []Entry {
	out := make([]Entry, 0, len(c.Types))
	for _, t := range c.Types {
		e := Entry{Type: t.Name, Fields: t.Fields, Producers: []string{}, Subscriptions: []Subscription{}}
		for _, p := range c.Producers {
			for _, typ := range p.Emits {
				if typ == t.Name {
					e.Producers = append(e.Producers, p.Name)
				}
			}
		}
		for _, s := range c.Subscriptions {
			if s.Matches(t.Name) {
				e.Subscriptions = append(e.Subscriptions, s)
			}
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// WriteText prints the generated catalog as an aligned table.
func (c Catalog) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tPRODUCERS\tSUBSCRIPTIONS")
	for _, e := range c.Entries() {
		subs := make([]string, len(e.Subscriptions))
		for i, s := range e.Subscriptions {
			subs[i] = fmt.Sprintf("%s(%s)", s.Name, s.Lane)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Type, dash(strings.Join(e.Producers, ",")), dash(strings.Join(subs, ",")))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Contract problems found by Catalog.Check; each *ContractError matches one.
var (
	// ErrUndeclaredEmit: a producer emits a type the catalog does not declare.
	ErrUndeclaredEmit = errors.New("emitted type is not declared")
	// ErrNoProducer: a declared type has no producer.
	ErrNoProducer = errors.New("declared type has no producer")
	// ErrGlobMatchesNothing: a subscription's pattern matches no declared type.
	ErrGlobMatchesNothing = errors.New("pattern matches no declared type")
	// ErrWrongLane: a row-change subscription is not on BEST_EFFORT, or a
	// domain subscription is on it; its dispatcher never sees its events.
	ErrWrongLane = errors.New("subscription on a lane that never sees its events")
	// ErrBadDeclaration: a malformed type, lane, pattern or a duplicate name.
	ErrBadDeclaration = errors.New("malformed declaration")
)

// ContractError is one contract violation: the kind (one of the errors
// above), the subject at fault and why.
type ContractError struct {
	Kind    error
	Subject string
	Detail  string
}

func (e *ContractError) Error() string {
	return fmt.Sprintf("%s: %v: %s", e.Subject, e.Kind, e.Detail)
}

// Unwrap returns the kind, so errors.Is(err, ErrNoProducer) works.
func (e *ContractError) Unwrap() error { return e.Kind }

// Check verifies the contract both ways: every emitted type is declared,
// every declared type has a producer, every pattern matches a declared type,
// row-change subscriptions are on BEST_EFFORT and domain subscriptions are
// not. It returns every violation, joined (errors.Join), or nil.
func (c Catalog) Check() error {
	var errs []error
	bad := func(kind error, subject, format string, args ...any) {
		errs = append(errs, &ContractError{Kind: kind, Subject: subject, Detail: fmt.Sprintf(format, args...)})
	}
	declared := map[string]bool{}
	for _, t := range c.Types {
		if !ValidType(t.Name) {
			bad(ErrBadDeclaration, "type "+t.Name, "malformed event type")
		}
		if declared[t.Name] {
			bad(ErrBadDeclaration, "type "+t.Name, "declared twice")
		}
		declared[t.Name] = true
	}
	produced := map[string]bool{}
	for _, p := range c.Producers {
		for _, typ := range p.Emits {
			produced[typ] = true
			if !declared[typ] {
				bad(ErrUndeclaredEmit, "producer "+p.Name, "emits %q, which is not declared", typ)
			}
		}
	}
	for _, t := range c.Types {
		if !produced[t.Name] {
			bad(ErrNoProducer, "type "+t.Name, "no producer emits it")
		}
	}
	names := map[string]bool{}
	for _, s := range c.Subscriptions {
		subject := "subscription " + s.Name
		if err := s.Validate(); err != nil {
			bad(ErrBadDeclaration, subject, "%v", err)
			continue
		}
		if names[s.Name] {
			bad(ErrBadDeclaration, subject, "name used twice")
		}
		names[s.Name] = true
		var matched, rows, domain []string
		for _, t := range c.Types {
			if s.Matches(t.Name) {
				matched = append(matched, t.Name)
				if IsRowChange(t.Name) {
					rows = append(rows, t.Name)
				} else {
					domain = append(domain, t.Name)
				}
			}
		}
		if len(matched) == 0 {
			hint := ""
			if !strings.ContainsAny(s.Pattern, "*?[") {
				hint = " (it has no wildcard, so it is an exact name)"
			}
			bad(ErrGlobMatchesNothing, subject, "pattern %q matches no declared type%s", s.Pattern, hint)
			continue
		}
		switch {
		case len(rows) > 0 && s.Lane != BestEffort:
			bad(ErrWrongLane, subject, "matches row changes %v on lane %s; only %s sees row changes", rows, s.Lane, BestEffort)
		case len(domain) > 0 && s.Lane == BestEffort:
			bad(ErrWrongLane, subject, "matches domain events %v on lane %s, which only sees row changes", domain, s.Lane)
		}
	}
	return errors.Join(errs...)
}
