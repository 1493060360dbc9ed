package subscribers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/resources"
)

// OrderMirror mirrors a paid order into the shop (adapters.Shopify).
type OrderMirror interface {
	MirrorOrder(ctx context.Context, key string, o adapters.ShopifyOrder) (adapters.ShopifyResult, error)
}

// ShipmentBooker books a paid order's shipment (adapters.Shipping).
type ShipmentBooker interface {
	BookShipment(ctx context.Context, key string, s adapters.Shipment) (adapters.Booking, error)
}

// Notifier sends one notification (adapters.Notifier).
type Notifier interface {
	Send(ctx context.Context, key string, n adapters.Notification) error
}

// Emitter commits an event with writes (*engine.Engine with the Bowline
// catalog).
type Emitter interface {
	EmitEvent(ctx context.Context, ev engine.Event) (engine.Envelope, error)
}

// DynamoDB is the part of the DynamoDB API the handlers use.
type DynamoDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// DefaultSupportWindow is Config.SupportWindow's default.
const DefaultSupportWindow = time.Hour

// Config configures the handlers.
type Config struct {
	// DB reads and writes the app table. Required.
	DB DynamoDB
	// Emitter emits pet.appetite_dropped. Required.
	Emitter Emitter
	// Names gives the app table. Required.
	Names resources.Names
	// Shop, Shipping and Notify are the external services. Required
	// (adapters.New gives all three).
	Shop     OrderMirror
	Shipping ShipmentBooker
	Notify   Notifier
	// SupportAddress receives device-fault notifications; default
	// "support".
	SupportAddress string
	// SupportWindow is the shortest time between two device-fault
	// e-mails about one bowl: faults in between are counted and the count
	// goes with the next e-mail. Default DefaultSupportWindow.
	SupportWindow time.Duration
	// MinHistoryDays is how many earlier days a pet needs before an
	// appetite drop is judged; default 3.
	MinHistoryDays int
	// ContactTTL is how long a cached owner contact is trusted without a
	// row change; default 5 minutes.
	ContactTTL time.Duration
	// Logger defaults to slog.Default(); Now to time.Now.
	Logger *slog.Logger
	Now    func() time.Time
}

// Validate reports the first missing field.
func (c Config) Validate() error {
	switch {
	case c.DB == nil:
		return errors.New("subscribers config: db: required")
	case c.Emitter == nil:
		return errors.New("subscribers config: emitter: required")
	case c.Names.Stack == "":
		return errors.New("subscribers config: names: required")
	case c.Shop == nil || c.Shipping == nil || c.Notify == nil:
		return errors.New("subscribers config: shop, shipping and notify adapters: required")
	case c.MinHistoryDays < 0:
		return fmt.Errorf("subscribers config: min history days %d: must not be negative", c.MinHistoryDays)
	case c.SupportWindow < 0:
		return fmt.Errorf("subscribers config: support window %v: must not be negative", c.SupportWindow)
	case c.ContactTTL < 0:
		return fmt.Errorf("subscribers config: contact ttl %v: must not be negative", c.ContactTTL)
	}
	return nil
}

func (c *Config) defaults() {
	if c.SupportAddress == "" {
		c.SupportAddress = "support"
	}
	if c.SupportWindow == 0 {
		c.SupportWindow = DefaultSupportWindow
	}
	if c.MinHistoryDays == 0 {
		c.MinHistoryDays = 3
	}
	if c.ContactTTL == 0 {
		c.ContactTTL = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// The adapters and the engine satisfy the interfaces above.
var (
	_ OrderMirror    = (*adapters.Shopify)(nil)
	_ ShipmentBooker = (*adapters.Shipping)(nil)
	_ Notifier       = (*adapters.Notifier)(nil)
	_ Emitter        = (*engine.Engine)(nil)
	_ DynamoDB       = (*dynamodb.Client)(nil)
)
