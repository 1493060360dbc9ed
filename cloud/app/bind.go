package app

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/subscribers"
	"github.com/bowline-iot/bowline/engine"
)

// ErrUnhandled: a DURABLE or BEST_EFFORT subscription of the catalog has
// no handler among the cloud subscribers.
var ErrUnhandled = errors.New("subscription has no handler in cloud/subscribers")

// Bind is the one place handlers meet subscriptions, for `bowline worker`
// and `bowline dev` alike: every DURABLE and BEST_EFFORT subscription of
// the catalog gets the cloud subscriber of that name from set. wrap, when
// not nil, wraps every handler (tests count runs with it).
//
// It fails, naming them, when a DURABLE or BEST_EFFORT subscription has no
// handler in set (ErrUnhandled; a nil set has none): a subscription is
// handled for real or is not in the catalog, never bound to a stand-in
// that succeeds without doing its work (docs/commerce.md, "No stub
// subscriptions"). It also fails when set has a handler for no
// subscription in the catalog.
func Bind(set *subscribers.Set, log *slog.Logger, wrap func(sub string, h engine.Handler) engine.Handler) (engine.Catalog, error) {
	if log == nil {
		log = slog.Default()
	}
	cat := catalog.Bowline()
	var have map[string]engine.Handler
	if set != nil {
		have = set.Handlers()
	}
	hs := map[string]engine.Handler{}
	var missing []string
	for _, sub := range cat.Subscriptions {
		if sub.Lane != engine.Durable && sub.Lane != engine.BestEffort {
			continue
		}
		h, ok := have[sub.Name]
		if !ok || h == nil {
			missing = append(missing, sub.Name)
			continue
		}
		hs[sub.Name] = h
	}
	if len(missing) > 0 {
		return engine.Catalog{}, fmt.Errorf("bind subscribers: %w: %s", ErrUnhandled, strings.Join(missing, ", "))
	}
	for name, h := range have {
		if _, ok := hs[name]; !ok {
			hs[name] = h // catalog.Bind names it if the catalog lacks it
		}
	}
	if wrap != nil {
		for name, h := range hs {
			hs[name] = wrap(name, h)
		}
	}
	bound, err := catalog.Bind(cat, hs)
	if err != nil {
		return engine.Catalog{}, err
	}
	log.Debug("subscriptions bound", "handlers", len(hs))
	return bound, nil
}
