package fakes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/cloud/adapters"
)

// Set is the three fakes, served together.
type Set struct {
	Shopify  *Fake
	Shipping *Fake
	Notify   *Fake
}

// NewSet returns a Shopify, a shipping and a notification fake.
func NewSet() *Set {
	must := func(kind string) *Fake {
		f, err := New(kind)
		if err != nil {
			panic(err) // the kinds are constants
		}
		return f
	}
	return &Set{Shopify: must(Shopify), Shipping: must(Shipping), Notify: must(Notify)}
}

// All returns the three fakes.
func (s *Set) All() []*Fake { return []*Fake{s.Shopify, s.Shipping, s.Notify} }

// Reset resets every fake.
func (s *Set) Reset() {
	for _, f := range s.All() {
		f.Reset()
	}
}

// Servers is a Set listening on loopback ports.
type Servers struct {
	Set *Set
	// URLs of the three fakes, "http://127.0.0.1:port".
	ShopifyURL, ShippingURL, NotifyURL string

	servers []*http.Server
	done    chan struct{}
	once    sync.Once
	err     error
}

// Serve starts each fake of set on its own free 127.0.0.1 port and serves
// until ctx ends or Close is called.
func Serve(ctx context.Context, set *Set) (*Servers, error) {
	s := &Servers{Set: set, done: make(chan struct{})}
	urls := []*string{&s.ShopifyURL, &s.ShippingURL, &s.NotifyURL}
	var lns []net.Listener
	for range set.All() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("fakes: listen on 127.0.0.1: %w", err)
		}
		lns = append(lns, ln)
	}
	for i, f := range set.All() {
		srv := &http.Server{Handler: f, ReadHeaderTimeout: 5 * time.Second}
		s.servers = append(s.servers, srv)
		*urls[i] = "http://" + lns[i].Addr().String()
		go func(ln net.Listener) { _ = srv.Serve(ln) }(lns[i])
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

// AdapterConfig returns an adapters.Config pointing at the fakes.
func (s *Servers) AdapterConfig() adapters.Config {
	return adapters.Config{ShopifyURL: s.ShopifyURL, ShippingURL: s.ShippingURL, NotifyURL: s.NotifyURL}
}

// Env returns BOWLINE_SHOPIFY_URL, BOWLINE_SHIPPING_URL and
// BOWLINE_NOTIFY_URL for a child process.
func (s *Servers) Env() []string {
	return []string{
		adapters.ShopifyURLEnv + "=" + s.ShopifyURL,
		adapters.ShippingURLEnv + "=" + s.ShippingURL,
		adapters.NotifyURLEnv + "=" + s.NotifyURL,
	}
}

// Close stops the servers. It is safe to call more than once.
func (s *Servers) Close() error {
	s.once.Do(func() {
		close(s.done)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var errs []error
		for _, srv := range s.servers {
			err := srv.Shutdown(ctx)
			if errors.Is(err, context.DeadlineExceeded) {
				// A connection still open when the grace ends belongs to a
				// client that stopped before sending a request (Shutdown
				// waits 5s for those) or gave up on one: the parts calling
				// the fakes have stopped by now, so close it.
				err = srv.Close()
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		s.err = errors.Join(errs...)
	})
	return s.err
}
