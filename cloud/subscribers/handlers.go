package subscribers

import (
	"log/slog"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
)

// Subscription names (engine/catalog) this package handles.
const (
	ShopifyMirror       = "shopify_mirror"
	BookShipment        = "book_shipment"
	NotifyBuyer         = "notify_buyer"
	MarkTagOrdered      = "mark_tag_ordered"
	RecordIntake        = "record_intake"
	NotifyOwner         = "notify_owner"
	NotifyOwnerEmpty    = "notify_owner_empty"
	NotifyOwnerAppetite = "notify_owner_appetite"
	NotifySupport       = "notify_support"
	ContactChanges      = "contact_changes"
)

// Event type emitted from record_intake.
const TypeAppetiteDropped = "pet.appetite_dropped"

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
		ShopifyMirror:       s.shopifyMirror,
		BookShipment:        s.bookShipment,
		NotifyBuyer:         s.notifyBuyer,
		MarkTagOrdered:      s.markTagOrdered,
		RecordIntake:        s.recordIntake,
		NotifyOwner:         s.notifyOwner(NotifyOwner),
		NotifyOwnerEmpty:    s.notifyOwner(NotifyOwnerEmpty),
		NotifyOwnerAppetite: s.notifyOwner(NotifyOwnerAppetite),
		NotifySupport:       s.notifySupport,
		ContactChanges:      s.contactChanged,
	}
}

// Bind returns c with every cloud handler attached (catalog.Bind); it
// fails when the catalog lacks one of the subscriptions.
func (s *Set) Bind(c engine.Catalog) (engine.Catalog, error) {
	return catalog.Bind(c, s.Handlers())
}
