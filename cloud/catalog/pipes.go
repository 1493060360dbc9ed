package catalog

import (
	"fmt"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/relay"
)

// Pipes returns the two pipes for catalog c, narrowed to what its
// subscriptions read (docs/relay.md, "Only what someone reads is
// streamed"):
//
//   - events: relay.EventsPipe, only event rows of the types some DURABLE
//     subscription matches (engine.Catalog.SubscribedTypes);
//   - record-changes: relay.RecordChangesPipe, only rows of the entities
//     some BEST_EFFORT subscription names (engine.Catalog.
//     SubscribedEntities), or every row when a pattern leaves the entity
//     open.
//
// `bowline relay` and `bowline dev` run these; the CloudFormation Pipes
// carry the same filters (deploy/cfn TestPipesMatchRelay).
func Pipes(c engine.Catalog) (events, recordChanges relay.PipeSpec, err error) {
	events, err = relay.EventsPipe.ForTypes(c.SubscribedTypes(engine.Durable))
	if err != nil {
		return relay.PipeSpec{}, relay.PipeSpec{}, fmt.Errorf("events pipe for the catalog: %w", err)
	}
	recordChanges = relay.RecordChangesPipe
	if entities, all := c.SubscribedEntities(); !all {
		if recordChanges, err = relay.RecordChangesPipe.ForEntities(entities); err != nil {
			return relay.PipeSpec{}, relay.PipeSpec{}, fmt.Errorf("record-changes pipe for the catalog: %w", err)
		}
	}
	return events, recordChanges, nil
}
