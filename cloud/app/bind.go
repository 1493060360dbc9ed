package app

import (
	"context"
	"log/slog"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/subscribers"
	"github.com/bowline-iot/bowline/engine"
)

// Bind is the one place handlers meet subscriptions, for `bowline worker`
// and `bowline dev` alike: every DURABLE and BEST_EFFORT subscription of
// the catalog gets the cloud subscriber of that name, or, where there is
// none, a handler that logs the event at debug level and succeeds. wrap,
// when not nil, wraps every handler (tests count runs with it). It fails
// when set has a handler for no subscription in the catalog.
func Bind(set *subscribers.Set, log *slog.Logger, wrap func(sub string, h engine.Handler) engine.Handler) (engine.Catalog, error) {
	if log == nil {
		log = slog.Default()
	}
	cat := catalog.Bowline()
	hs := map[string]engine.Handler{}
	for _, sub := range cat.Subscriptions {
		if sub.Lane == engine.Durable || sub.Lane == engine.BestEffort {
			name := sub.Name
			hs[name] = func(ctx context.Context, env engine.Envelope) error {
				log.Debug("event", "subscription", name, "event_id", env.ID, "type", env.Type, "tenant", env.Tenant, "seq", env.Seq)
				return nil
			}
		}
	}
	if set != nil {
		for name, h := range set.Handlers() {
			hs[name] = h
		}
	}
	if wrap != nil {
		for name, h := range hs {
			hs[name] = wrap(name, h)
		}
	}
	return catalog.Bind(cat, hs)
}
