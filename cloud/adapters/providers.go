package adapters

import (
	"context"
	"fmt"
)

// Item is one order line.
type Item struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// ShopifyOrder is the order mirrored into Shopify.
type ShopifyOrder struct {
	OrderID     string `json:"order_id"`
	Tenant      string `json:"tenant"`
	CustomerID  string `json:"customer_id"`
	PaymentID   string `json:"payment_id"`
	AmountCents int64  `json:"amount_cents"`
	Items       []Item `json:"items"`
}

// ShopifyResult is Shopify's answer.
type ShopifyResult struct {
	ID string `json:"id"`
}

// Shipment asks the carrier to collect an order.
type Shipment struct {
	OrderID    string `json:"order_id"`
	Tenant     string `json:"tenant"`
	CustomerID string `json:"customer_id"`
	Items      []Item `json:"items"`
}

// Booking is the carrier's answer.
type Booking struct {
	ID       string `json:"id"`
	Tracking string `json:"tracking"`
}

// Notification is one message to a person.
type Notification struct {
	// Tenant the message is about.
	Tenant string `json:"tenant"`
	// To is the recipient (an email address, a phone number, "support").
	To string `json:"to"`
	// Channel is "email", "sms" or "push".
	Channel string `json:"channel"`
	// Template names the message, usually the event type.
	Template string `json:"template"`
	// Data fills the template.
	Data map[string]any `json:"data,omitempty"`
}

// Shopify mirrors orders into Shopify.
type Shopify struct{ ep endpoint }

// MirrorOrder creates (or, under the same key, re-acknowledges) the order.
func (s *Shopify) MirrorOrder(ctx context.Context, key string, o ShopifyOrder) (ShopifyResult, error) {
	var res ShopifyResult
	if err := s.ep.post(ctx, "/orders", key, o, &res); err != nil {
		return ShopifyResult{}, fmt.Errorf("mirror order %s: %w", o.OrderID, err)
	}
	return res, nil
}

// Shipping books shipments with the carrier.
type Shipping struct{ ep endpoint }

// BookShipment books the order's shipment.
func (s *Shipping) BookShipment(ctx context.Context, key string, sh Shipment) (Booking, error) {
	var res Booking
	if err := s.ep.post(ctx, "/shipments", key, sh, &res); err != nil {
		return Booking{}, fmt.Errorf("book shipment for order %s: %w", sh.OrderID, err)
	}
	return res, nil
}

// Notifier sends notifications.
type Notifier struct{ ep endpoint }

// Send sends one notification.
func (n *Notifier) Send(ctx context.Context, key string, msg Notification) error {
	if err := n.ep.post(ctx, "/notifications", key, msg, nil); err != nil {
		return fmt.Errorf("notify %s (%s): %w", msg.To, msg.Template, err)
	}
	return nil
}

// Clients holds the three adapters; they share one HTTP client.
type Clients struct {
	Shopify  *Shopify
	Shipping *Shipping
	Notify   *Notifier
}

// New validates cfg and returns the adapters.
func New(cfg Config) (*Clients, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	ep := func(service, base string) endpoint {
		return endpoint{service: service, base: base, client: cfg.HTTPClient, timeout: cfg.Timeout, log: cfg.Logger}
	}
	return &Clients{
		Shopify:  &Shopify{ep: ep("shopify", cfg.ShopifyURL)},
		Shipping: &Shipping{ep: ep("shipping", cfg.ShippingURL)},
		Notify:   &Notifier{ep: ep("notify", cfg.NotifyURL)},
	}, nil
}
