package engine

import (
	"slices"
	"strings"
)

// SubscribedTypes returns the declared types, sorted, that at least one
// subscription on lane matches: the only events that lane's dispatcher can
// act on. An event of any other type reaches no handler of that lane, so a
// pipe feeding it may drop the event before it is queued
// (docs/relay.md, "Only what someone reads is streamed").
func (c Catalog) SubscribedTypes(lane Lane) []string {
	var out []string
	for _, t := range c.Types {
		if len(Match(c.Subscriptions, lane, t.Name)) > 0 {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SubscribedEntities returns the entities, sorted, of the record-change
// types (row.<entity>.<op>) that BEST_EFFORT subscriptions can match.
// They are read from the patterns, not from the declared types, because the
// record-change consumer matches every row change, declared or not. all is
// true when some pattern leaves the entity open (a glob such as "row.*"):
// then every entity can match and nothing may be filtered out.
func (c Catalog) SubscribedEntities() (entities []string, all bool) {
	for _, s := range c.Subscriptions {
		if s.Lane != BestEffort {
			continue
		}
		rest, ok := strings.CutPrefix(s.Pattern, RowChangePrefix)
		entity, _, dotted := strings.Cut(rest, ".")
		if !ok || !dotted || entity == "" || strings.ContainsAny(entity, `*?[\`) {
			return nil, true
		}
		entities = append(entities, strings.ToLower(entity))
	}
	slices.Sort(entities)
	return slices.Compact(entities), false
}
