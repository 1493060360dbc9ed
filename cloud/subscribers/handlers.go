package subscribers

import (
	"log/slog"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
)

// Set is the cloud subscribers with their shared state (the owner
// directory). Build one per process with New.
type Set struct {
	cfg      Config
	log      *slog.Logger
	contacts *Directory
}

// New validates cfg and returns the handlers.
func New(cfg Config) (*Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	return &Set{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "subscribers"),
		contacts: newDirectory(cfg.DB, cfg.Names.AppTable(), cfg.ContactTTL, cfg.Now),
	}, nil
}

// Contacts returns the owner directory.
func (s *Set) Contacts() *Directory { return s.contacts }

// Handlers returns every handler by subscription name.
func (s *Set) Handlers() map[string]engine.Handler {
	return map[string]engine.Handler{
		catalog.SubShopifyMirror:       s.shopifyMirror,
		catalog.SubBookShipment:        s.bookShipment,
		catalog.SubNotifyBuyer:         s.notifyBuyer,
		catalog.SubMarkTagOrdered:      s.markTagOrdered,
		catalog.SubRecordIntake:        s.recordIntake,
		catalog.SubNotifyOwner:         s.notifyOwner(catalog.SubNotifyOwner),
		catalog.SubNotifyOwnerEmpty:    s.notifyOwner(catalog.SubNotifyOwnerEmpty),
		catalog.SubNotifyOwnerAppetite: s.notifyOwner(catalog.SubNotifyOwnerAppetite),
		catalog.SubNotifySupport:       s.notifySupport,
		catalog.SubContactChanges:      s.contactChanged,
	}
}

// Bind returns c with every cloud handler attached (catalog.Bind); it
// fails when the catalog lacks one of the subscriptions.
func (s *Set) Bind(c engine.Catalog) (engine.Catalog, error) {
	return catalog.Bind(c, s.Handlers())
}
