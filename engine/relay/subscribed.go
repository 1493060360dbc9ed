package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Errors of the subscription filters.
var (
	// ErrNothingSubscribed: a filter for no type or entity at all was
	// asked for; an EventBridge pattern cannot say "nothing".
	ErrNothingSubscribed = errors.New("no subscribed type or entity")
)

// ForTypes returns p narrowed to stream records whose NewImage has a
// "type" attribute among types: the pattern of each of p's filters gains
// dynamodb.NewImage.type.S = [types...] (sorted). The composition root
// passes the types some subscription matches (engine.Catalog.
// SubscribedTypes), so events nobody reads never reach the queue; the
// engine names no type itself.
func (p PipeSpec) ForTypes(types []string) (PipeSpec, error) {
	if len(types) == 0 {
		return PipeSpec{}, fmt.Errorf("pipe %q: %w", p.Name, ErrNothingSubscribed)
	}
	list := slices.Clone(types)
	slices.Sort(list)
	list = slices.Compact(list)
	vals := make([]any, len(list))
	for i, t := range list {
		vals[i] = t
	}
	bases := p.Filters
	if len(bases) == 0 {
		bases = []string{"{}"}
	}
	out := p
	out.Filters = nil
	for _, base := range bases {
		var pat map[string]any
		if err := json.Unmarshal([]byte(base), &pat); err != nil {
			return PipeSpec{}, fmt.Errorf("pipe %q: filter %s: %w: %v", p.Name, base, ErrBadFilter, err)
		}
		dyn := objectAt(pat, "dynamodb")
		img := objectAt(dyn, "NewImage")
		img["type"] = map[string]any{"S": vals}
		b, err := json.Marshal(pat)
		if err != nil {
			return PipeSpec{}, err
		}
		out.Filters = append(out.Filters, string(b))
	}
	return out, out.Validate()
}

// ForEntities returns p (a pipe whose body is a whole app-table stream
// record) narrowed to the records of rows of the given entities, as the
// record-change consumer names them (engine/recordchange: the row's
// "entity" attribute, case folded, else the first "#" segment of its pk).
// Three filters, any of which passes a record:
//
//   - NewImage.entity is one of entities (INSERT, MODIFY), ignoring case;
//   - OldImage.entity likewise (MODIFY, REMOVE);
//   - Keys.pk is "<entity>" or starts with "<entity>#", ignoring case (a
//     row without an entity attribute).
//
// The third may pass a row whose entity attribute names another entity;
// the consumer then finds no subscription and drops it. A superset, never
// fewer rows than the consumer would match.
func (p PipeSpec) ForEntities(entities []string) (PipeSpec, error) {
	if len(entities) == 0 {
		return PipeSpec{}, fmt.Errorf("pipe %q: %w", p.Name, ErrNothingSubscribed)
	}
	if len(p.Filters) > 0 {
		return PipeSpec{}, fmt.Errorf("pipe %q: ForEntities wants an unfiltered pipe: %w", p.Name, ErrBadFilter)
	}
	list := slices.Clone(entities)
	slices.Sort(list)
	list = slices.Compact(list)
	var names, pks []any
	for _, e := range list {
		names = append(names, map[string]any{"equals-ignore-case": e})
		pks = append(pks, map[string]any{"equals-ignore-case": e}, map[string]any{"prefix": map[string]any{"equals-ignore-case": e + "#"}})
	}
	out := p
	for _, pat := range []map[string]any{
		{"dynamodb": map[string]any{"NewImage": map[string]any{"entity": map[string]any{"S": names}}}},
		{"dynamodb": map[string]any{"OldImage": map[string]any{"entity": map[string]any{"S": names}}}},
		{"dynamodb": map[string]any{"Keys": map[string]any{"pk": map[string]any{"S": pks}}}},
	} {
		b, err := json.Marshal(pat)
		if err != nil {
			return PipeSpec{}, err
		}
		out.Filters = append(out.Filters, string(b))
	}
	return out, out.Validate()
}

// objectAt returns m[key] as an object, creating it when absent.
func objectAt(m map[string]any, key string) map[string]any {
	if o, ok := m[key].(map[string]any); ok {
		return o
	}
	o := map[string]any{}
	m[key] = o
	return o
}
