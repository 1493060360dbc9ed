package adapters

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"
)

// Environment variables holding the base URLs.
const (
	ShopifyURLEnv  = "BOWLINE_SHOPIFY_URL"
	ShippingURLEnv = "BOWLINE_SHIPPING_URL"
	NotifyURLEnv   = "BOWLINE_NOTIFY_URL"
)

// DefaultTimeout bounds one call when the context has no earlier deadline.
const DefaultTimeout = 10 * time.Second

// Config configures the three adapters.
type Config struct {
	// ShopifyURL, ShippingURL and NotifyURL are the providers' base URLs,
	// e.g. "http://127.0.0.1:9101". An adapter whose URL is empty fails
	// every call with ErrNoBaseURL (terminal), so a misconfigured worker
	// dead-letters instead of looping.
	ShopifyURL  string
	ShippingURL string
	NotifyURL   string
	// Timeout bounds one call; default DefaultTimeout.
	Timeout time.Duration
	// HTTPClient sends the requests; default a client with Timeout.
	HTTPClient *http.Client
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// ConfigFromEnv reads the base URLs from BOWLINE_SHOPIFY_URL,
// BOWLINE_SHIPPING_URL and BOWLINE_NOTIFY_URL.
func ConfigFromEnv() Config {
	return Config{
		ShopifyURL:  os.Getenv(ShopifyURLEnv),
		ShippingURL: os.Getenv(ShippingURLEnv),
		NotifyURL:   os.Getenv(NotifyURLEnv),
	}
}

// Validate checks that every URL that is set is an absolute http(s) URL.
func (c Config) Validate() error {
	for _, u := range []struct{ name, v string }{
		{ShopifyURLEnv, c.ShopifyURL}, {ShippingURLEnv, c.ShippingURL}, {NotifyURLEnv, c.NotifyURL},
	} {
		if u.v == "" {
			continue
		}
		p, err := url.Parse(u.v)
		if err != nil {
			return fmt.Errorf("adapters config: %s %q: %w", u.name, u.v, err)
		}
		if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("adapters config: %s %q: want an absolute http or https url", u.name, u.v)
		}
	}
	if c.Timeout < 0 {
		return fmt.Errorf("adapters config: timeout %v: must not be negative", c.Timeout)
	}
	return nil
}

func (c *Config) defaults() {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: c.Timeout}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
