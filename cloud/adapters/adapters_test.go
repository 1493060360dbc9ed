package adapters_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/fakes"
)

func newClients(t *testing.T, set *fakes.Set, timeout time.Duration) *adapters.Clients {
	t.Helper()
	var urls [3]string
	for i, f := range set.All() {
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	c, err := adapters.New(adapters.Config{ShopifyURL: urls[0], ShippingURL: urls[1], NotifyURL: urls[2], Timeout: timeout})
	if err != nil {
		t.Fatalf("adapters.New: %v", err)
	}
	return c
}

func TestEveryCallCarriesTheIdempotencyKey(t *testing.T) {
	set := fakes.NewSet()
	c := newClients(t, set, 0)
	ctx := context.Background()
	key := adapters.Key("01EVENT", "shopify_mirror")
	res, err := c.Shopify.MirrorOrder(ctx, key, adapters.ShopifyOrder{OrderID: "o1", Items: []adapters.Item{{SKU: "TAG-001", Qty: 1}}})
	if err != nil {
		t.Fatalf("MirrorOrder: %v", err)
	}
	if res.ID == "" {
		t.Errorf("MirrorOrder id = %q; want the fake's id", res.ID)
	}
	if _, err := c.Shipping.BookShipment(ctx, adapters.Key("01EVENT", "book_shipment"), adapters.Shipment{OrderID: "o1"}); err != nil {
		t.Fatalf("BookShipment: %v", err)
	}
	if err := c.Notify.Send(ctx, adapters.Key("01EVENT", "notify_buyer"), adapters.Notification{To: "c1", Template: "com.payment_completed"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	for _, tc := range []struct {
		fake *fakes.Fake
		path string
		key  string
	}{
		{set.Shopify, "/orders", "01EVENT:shopify_mirror"},
		{set.Shipping, "/shipments", "01EVENT:book_shipment"},
		{set.Notify, "/notifications", "01EVENT:notify_buyer"},
	} {
		calls := tc.fake.Calls()
		if len(calls) != 1 {
			t.Fatalf("%s calls = %d; want 1", tc.fake.Kind(), len(calls))
		}
		if calls[0].IdempotencyKey != tc.key || calls[0].Path != tc.path {
			t.Errorf("%s call = %s key %q; want %s key %q", tc.fake.Kind(), calls[0].Path, calls[0].IdempotencyKey, tc.path, tc.key)
		}
	}
}

func TestErrorClasses(t *testing.T) {
	for _, tc := range []struct {
		status    int
		retryable bool
	}{
		{http.StatusTooManyRequests, true},
		{http.StatusInternalServerError, true},
		{http.StatusBadGateway, true},
		{http.StatusServiceUnavailable, true},
		// The provider timed out waiting for the request: send it again.
		{http.StatusRequestTimeout, true},
		// The same Idempotency-Key is still in progress: the first call may
		// yet succeed, so retry later rather than dead-letter.
		{http.StatusConflict, true},
		{http.StatusTooEarly, true},
		{http.StatusBadRequest, false},
		{http.StatusUnauthorized, false},
		{http.StatusNotFound, false},
		// The same key with a different body.
		{http.StatusUnprocessableEntity, false},
	} {
		set := fakes.NewSet()
		c := newClients(t, set, 0)
		set.Notify.FailNext(1, tc.status)
		err := c.Notify.Send(context.Background(), "e:s", adapters.Notification{To: "x"})
		if err == nil {
			t.Fatalf("status %d: Send error = nil; want one", tc.status)
		}
		if got := adapters.IsRetryable(err); got != tc.retryable {
			t.Errorf("status %d: IsRetryable = %v; want %v (err %v)", tc.status, got, tc.retryable, err)
		}
		var serr *adapters.StatusError
		if !errors.As(err, &serr) || serr.Status != tc.status {
			t.Errorf("status %d: error %v; want a *StatusError with that status", tc.status, err)
		}
		// The failure is spent: the next call succeeds.
		if err := c.Notify.Send(context.Background(), "e:s", adapters.Notification{To: "x"}); err != nil {
			t.Errorf("status %d: second Send = %v; want nil", tc.status, err)
		}
	}
}

func TestTimeoutAndRefusedConnectionAreRetryable(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	c, err := adapters.New(adapters.Config{ShopifyURL: slow.URL, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Shopify.MirrorOrder(context.Background(), "e:shopify_mirror", adapters.ShopifyOrder{OrderID: "o1"})
	if err == nil || !adapters.IsRetryable(err) || !errors.Is(err, adapters.ErrRetryable) {
		t.Errorf("timeout: err = %v; want a retryable error", err)
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	c, err = adapters.New(adapters.Config{ShippingURL: url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Shipping.BookShipment(context.Background(), "e:book_shipment", adapters.Shipment{OrderID: "o1"})
	if err == nil || !adapters.IsRetryable(err) {
		t.Errorf("refused: err = %v; want a retryable error", err)
	}
}

func TestMisconfigurationIsTerminal(t *testing.T) {
	c, err := adapters.New(adapters.Config{})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Notify.Send(context.Background(), "e:s", adapters.Notification{To: "x"})
	if !errors.Is(err, adapters.ErrNoBaseURL) || adapters.IsRetryable(err) {
		t.Errorf("no base url: err = %v; want terminal ErrNoBaseURL", err)
	}
	set := fakes.NewSet()
	c = newClients(t, set, 0)
	err = c.Notify.Send(context.Background(), "", adapters.Notification{To: "x"})
	if !errors.Is(err, adapters.ErrNoIdempotencyKey) || adapters.IsRetryable(err) {
		t.Errorf("no key: err = %v; want terminal ErrNoIdempotencyKey", err)
	}
	if n := len(set.Notify.Calls()); n != 0 {
		t.Errorf("calls without a key = %d; want 0 (refused before sending)", n)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  adapters.Config
		want string
	}{
		{adapters.Config{}, ""},
		{adapters.Config{ShopifyURL: "http://127.0.0.1:1"}, ""},
		{adapters.Config{ShopifyURL: "127.0.0.1:1"}, adapters.ShopifyURLEnv},
		{adapters.Config{NotifyURL: "ftp://x"}, adapters.NotifyURLEnv},
		{adapters.Config{Timeout: -1}, "timeout"},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v; want an error naming %q (or nil)", tc.cfg, err, tc.want)
		}
	}
}
